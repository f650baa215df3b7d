package io.dilu.deviceplugin.bench;

import java.util.List;

/**
 * The median of a sample and a distribution-free confidence interval for it: the order statistics whose ranks the
 * sign test (a binomial of one half) puts at least 95% between, the widest-coverage pair below 95% never taken. It
 * assumes only that the values are independent draws of one distribution, which a run-to-run spread of unknown
 * shape (a VM's launch cost: a few runs hundreds of ns off) needs.
 *
 * @param coverage the interval's exact coverage, ≥ 0.95 where the sample allows (six values or more), else that of
 *     the whole range
 */
record MedianCi(int n, double median, double low, double high, double coverage) {

    static final double LEVEL = 0.95;

    /** Half the interval's width: the ± a figure is resolved to. */
    double halfWidth() {
        return (high - low) / 2;
    }

    static MedianCi of(List<Double> values) {
        if (values.isEmpty()) {
            throw new IllegalArgumentException("a median needs at least one value");
        }
        List<Double> sorted = values.stream().sorted().toList();
        int n = sorted.size();
        double median = n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
        // The k-th smallest and k-th largest bound the median unless at most k - 1 values fall on one side:
        // probability 2 · P(B ≤ k - 1), B ~ Binomial(n, 1/2). The largest k that keeps that within 1 - LEVEL.
        int k = 1;
        while (k + 1 <= (n + 1) / 2 && 2 * binomialCdf(n, k) <= 1 - LEVEL) {
            k++;
        }
        return new MedianCi(n, median, sorted.get(k - 1), sorted.get(n - k), 1 - 2 * binomialCdf(n, k - 1));
    }

    /** P(B ≤ x) for B ~ Binomial(n, 1/2). */
    static double binomialCdf(int n, int x) {
        double term = Math.pow(0.5, n); // P(B = 0)
        double sum = 0;
        for (int i = 0; i <= x; i++) {
            sum += term;
            term = term * (n - i) / (i + 1);
        }
        return sum;
    }
}
