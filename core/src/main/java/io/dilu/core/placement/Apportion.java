package io.dilu.core.placement;

/** Whole shares of a whole: pipeline stages' SM percents, which must add up to what the pod asked. */
public final class Apportion {

    private Apportion() {}

    /**
     * {@code total} split over {@code weights}: one each, the rest in proportion by largest remainders (ties to
     * the earlier part); null when there are more parts than {@code total}.
     */
    public static int[] largestRemainder(int total, long[] weights) {
        int k = weights.length;
        if (total < k) {
            return null;
        }
        int rest = total - k;
        long sum = java.util.Arrays.stream(weights).sum();
        int[] parts = new int[k];
        double[] remainders = new double[k];
        int given = 0;
        for (int i = 0; i < k; i++) {
            double exact = (double) rest * weights[i] / sum;
            int floor = (int) Math.floor(exact);
            parts[i] = 1 + floor;
            remainders[i] = exact - floor;
            given += floor;
        }
        Integer[] order = java.util.stream.IntStream.range(0, k).boxed().toArray(Integer[]::new);
        java.util.Arrays.sort(order, (a, b) -> Double.compare(remainders[b], remainders[a]));
        for (int j = 0; j < rest - given; j++) {
            parts[order[j]]++;
        }
        return parts;
    }
}
