package io.dilu.core.placement;

import java.util.Map;

/**
 * What Weng et al.'s Fragmentation Gradient Descent teaches Algorithm 1 (USENIX ATC'23): the SM share a
 * placement leaves free is only worth something if the instances that come next can use it. A node's
 * fragmentation for a request class m is the free share (under Ω) that m cannot use — the free share of its
 * GPUs with less than m free when m fits the node, all of it when m does not — and its expected
 * fragmentation weighs the classes by how often they occur. {@link ComplementaryPlacement} adds the change
 * a placement makes to it, in GPUs, to its best-fit score.
 *
 * <p>Where FGD needs the target workload given, this learns it from the cluster: the classes are the shapes
 * of the instances booked now ({@link ClusterState#requestMix()}), so the outlook follows the mix the
 * cluster serves and needs no setting. Classes of one GPU add up per GPU, so their part is one table
 * lookup per GPU; classes of several GPUs depend on the node and are counted over its GPUs.
 */
final class FragmentationOutlook {

    private final int omegaMilli;
    private long version = -1;
    /** Per GPU free share f (0..Ω): Σ over one-GPU classes m with f < m of p_m × f, in thousandths. */
    private double[] single = new double[0];
    private int[] multiMilli = new int[0];
    private int[] multiGpus = new int[0];
    private double[] multiWeight = new double[0];

    FragmentationOutlook(int omegaMilli) {
        this.omegaMilli = omegaMilli;
    }

    /**
     * The change in the expected fragmentation of GPU {@code g}'s node, in GPUs, when {@code request} more
     * is booked on {@code g}; 0 while nothing is booked.
     */
    double delta(ClusterState state, int g, int request) {
        learn(state);
        int before = free(state, g);
        int after = Math.max(0, before - request);
        double change = single[after] - single[before];
        if (multiMilli.length > 0) {
            int node = state.nodeOf(g);
            int first = state.firstGpu(node);
            int[] free = new int[state.endGpu(node) - first];
            for (int i = 0; i < free.length; i++) {
                free[i] = free(state, first + i);
            }
            int[] freeAfter = free.clone();
            freeAfter[g - first] = after;
            for (int c = 0; c < multiMilli.length; c++) {
                change += multiWeight[c] * (FragmentationGradientPlacement.fragmentation(freeAfter, multiMilli[c], multiGpus[c])
                        - FragmentationGradientPlacement.fragmentation(free, multiMilli[c], multiGpus[c]));
            }
        }
        return change / 1000.0;
    }

    private int free(ClusterState state, int g) {
        return Math.clamp(omegaMilli - state.requestSum(g), 0, omegaMilli);
    }

    private void learn(ClusterState state) {
        if (version == state.requestMixVersion()) {
            return;
        }
        version = state.requestMixVersion();
        Map<ClusterState.RequestClass, Integer> mix = state.requestMix();
        double total = mix.values().stream().mapToInt(Integer::intValue).sum();
        double[] weightBelow = new double[omegaMilli + 2];
        int multi = (int) mix.keySet().stream().filter(k -> k.gpus() > 1).count();
        multiMilli = new int[multi];
        multiGpus = new int[multi];
        multiWeight = new double[multi];
        int c = 0;
        for (Map.Entry<ClusterState.RequestClass, Integer> e : mix.entrySet()) {
            double p = e.getValue() / total;
            ClusterState.RequestClass k = e.getKey();
            if (k.gpus() > 1) {
                multiMilli[c] = k.requestMilli();
                multiGpus[c] = k.gpus();
                multiWeight[c++] = p;
            } else {
                // A GPU with f free is a fragment for every one-GPU class asking more than f.
                weightBelow[Math.min(k.requestMilli(), omegaMilli + 1)] += p;
            }
        }
        single = new double[omegaMilli + 1];
        double larger = 0;
        for (int f = omegaMilli + 1; f >= 0; f--) {
            if (f <= omegaMilli) {
                single[f] = larger * f;
            }
            larger += weightBelow[f];
        }
    }
}
