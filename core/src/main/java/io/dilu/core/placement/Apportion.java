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

    /**
     * The SM limit of each pipeline stage of a split instance: the instance's limit apportioned by the memory each
     * stage holds (as its request was), and never below the stage's own request. The stage annotation ({@code
     * dilu.io/assigned-gpus}) records each stage's request and memory but not its limit, so every reader that needs the
     * limits works them out here: the placement that splits the instance, the extender's book of a bound pod, and the
     * node agent's token shares, which must all hold the same limits. Any unit (percent, thousandths) that {@code
     * limit} and {@code stageRequests} share.
     *
     * @param limit the instance's SM limit; at least the sum of {@code stageRequests} is apportioned
     * @param stageRequests each stage's SM request, at least 1
     * @param stageMemoryMib each stage's memory, the weights, in the order of {@code stageRequests}
     */
    public static int[] stageLimits(int limit, int[] stageRequests, long[] stageMemoryMib) {
        int[] limits = largestRemainder(Math.max(limit, java.util.Arrays.stream(stageRequests).sum()), stageMemoryMib);
        for (int i = 0; i < limits.length; i++) {
            limits[i] = Math.max(stageRequests[i], limits[i]);
        }
        return limits;
    }
}
