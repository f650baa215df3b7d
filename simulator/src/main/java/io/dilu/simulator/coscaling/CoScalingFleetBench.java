package io.dilu.simulator.coscaling;

import io.dilu.core.placement.NodeInventory;
import io.dilu.simulator.ClusterShape;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * {@code ./dilu bench coscaling-fleet}: the fleet of {@link FleetFunctions} on one pool ({@link CoScalingFleet}) under
 * each policy — GPUs needed (peak and GPU-hours), SVR and cold starts per kind of function (scale-outs and failed
 * wakes), wakes, evictions and parked memory — in a table, then issue 35's bar read off it, then one {@code BENCH
 * coscaling-fleet policy=…} line per policy. A model, not a measurement (docs/coscaling.md).
 */
public final class CoScalingFleetBench {

    private CoScalingFleetBench() {}

    /** Runs {@code policyNames} on the fleet of {@code size}; every BENCH line comes after the report. */
    public static List<CoScalingFleet.Outcome> run(PrintWriter out, FleetFunctions.Size size, List<String> policyNames) {
        Map<String, java.util.function.Function<FunctionProfile, CoScalingPolicy>> known = CoScalingBench.policies();
        for (String name : policyNames) {
            if (!known.containsKey(name)) {
                throw new IllegalArgumentException("policy " + name + " is not one of " + known.keySet());
            }
        }
        List<FleetFunctions.Function> functions = FleetFunctions.choose(size);
        List<NodeInventory> nodes = CoScalingFleet.pool(functions);
        out.printf(Locale.ROOT, "co-scaling fleet (a model, not a measurement): %d functions, %d s, on one pool of %d nodes of %d x %s "
                        + "(%d GPUs, enough for every policy), each instance placed by Algorithm 1%n", functions.size(),
                size.seconds(), nodes.size(), ClusterShape.PAPER.gpusPerNode(), ClusterShape.PAPER.model(),
                nodes.size() * ClusterShape.PAPER.gpusPerNode());
        out.printf(Locale.ROOT, "functions (seed %d): inference from the Azure Functions 2019 HTTP functions, LLM from ServeGen's "
                + "language clients; shares and memory of the paper's mix, serving as the mid-size model; each kind scaled by one "
                + "factor to one instance's request rate per function on average (docs/coscaling.md)%n", size.seed());
        for (FleetFunctions.Function f : functions) {
            out.println("  " + FleetFunctions.describe(f));
        }
        out.println();
        Map<String, CoScalingFleet.Outcome> outcomes = new LinkedHashMap<>();
        long began = System.nanoTime();
        for (String name : policyNames) {
            outcomes.put(name, CoScalingFleet.run(functions, name, known.get(name), nodes));
        }
        double took = (System.nanoTime() - began) / 1e9;
        table(out, outcomes);
        bar(out, outcomes);
        out.printf(Locale.ROOT, "the model ran in %.1f s%n", took);
        List<CoScalingFleet.Outcome> list = new ArrayList<>(outcomes.values());
        for (CoScalingFleet.Outcome o : list) {
            out.println(benchLine(o, functions.size(), size.seconds()));
        }
        out.flush();
        return List.copyOf(list);
    }

    private static void table(PrintWriter out, Map<String, CoScalingFleet.Outcome> outcomes) {
        out.printf(Locale.ROOT, "  %-15s %5s %7s %7s %7s | %-22s | %-22s | %7s %6s %6s %7s %8s%n", "", "GPUs", "GPU-h", "parked", "SM",
                "inference", "llm", "all", "", "", "evict-", "parked");
        out.printf(Locale.ROOT, "  %-15s %5s %7s %7s %7s | %7s %14s | %7s %14s | %7s %6s %6s %7s %8s%n", "policy", "peak", "", "only",
                "GPU-h", "SVR", "cold out/wake", "SVR", "cold out/wake", "SVR", "wakes", "failed", "ions", "GiB-h");
        outcomes.forEach((name, o) -> {
            CoScalingFleet.KindBooks inf = o.kind(FleetFunctions.Kind.INFERENCE);
            CoScalingFleet.KindBooks llm = o.kind(FleetFunctions.Kind.LLM);
            CoScalingFleet.KindBooks all = o.all();
            out.printf(Locale.ROOT, "  %-15s %5d %7.1f %7.1f %7.1f | %6.2f%% %14s | %6.2f%% %14s | %6.2f%% %6d %6d %7d %8.1f%n", name,
                    o.gpusPeak(), o.gpuSeconds() / 3600, o.parkedOnlyGpuSeconds() / 3600, o.smGpuSeconds() / 3600,
                    100 * inf.svr(), inf.scaleOutColdStarts() + "/" + inf.failedWakeColdStarts(), 100 * llm.svr(),
                    llm.scaleOutColdStarts() + "/" + llm.failedWakeColdStarts(), 100 * all.svr(), all.wakes(),
                    all.failedWakeColdStarts(), o.evictions(), o.parkedGibSeconds() / 3600);
        });
        out.println("  (GPU-h: GPUs with anything booked, parked-only: of those, GPUs holding parked instances alone; SM GPU-h: SM "
                + "requests booked; cold out/wake: cold starts asked by a scale-out after t=0 / of a wake that found its GPU full; "
                + "failed: failed wakes; evictions: parked instances let go, for a placement's memory or with the GPU they alone held)");
        double waiting = outcomes.values().stream().mapToDouble(CoScalingFleet.Outcome::waitingSeconds).sum();
        if (waiting > 0) {
            out.printf(Locale.ROOT, "  instances waited %.0f s in all for room in the pool%n", waiting);
        }
    }

    /** Issue 35's bar for the fleet: Dilu needs fewer GPU-hours than KPA and INFless+, at an SVR at most theirs. */
    private static void bar(PrintWriter out, Map<String, CoScalingFleet.Outcome> outcomes) {
        CoScalingFleet.Outcome dilu = outcomes.get("dilu");
        if (dilu == null) {
            return;
        }
        for (String other : List.of("kpa", "infless")) {
            CoScalingFleet.Outcome o = outcomes.get(other);
            if (o == null) {
                continue;
            }
            boolean fewer = dilu.gpuSeconds() < o.gpuSeconds();
            boolean svr = dilu.all().svr() <= o.all().svr();
            out.printf(Locale.ROOT, "issue 35's bar against %s: GPU-h %.1f against %.1f (%s), SVR %.2f%% against %.2f%% (%s): %s%n",
                    other, dilu.gpuSeconds() / 3600, o.gpuSeconds() / 3600, fewer ? "fewer" : "not fewer", 100 * dilu.all().svr(),
                    100 * o.all().svr(), svr ? "at most" : "above", fewer && svr ? "met" : "not met");
        }
    }

    static String benchLine(CoScalingFleet.Outcome o, int functions, int seconds) {
        StringBuilder b = new StringBuilder(String.format(Locale.ROOT,
                "BENCH coscaling-fleet model=fluid policy=%s functions=%d seconds=%d gpus_peak=%d gpu_h=%.2f parked_only_gpu_h=%.2f"
                        + " sm_gpu_h=%.2f svr=%.2f", o.policy(), functions, seconds, o.gpusPeak(), o.gpuSeconds() / 3600,
                o.parkedOnlyGpuSeconds() / 3600, o.smGpuSeconds() / 3600, 100 * o.all().svr()));
        for (FleetFunctions.Kind kind : FleetFunctions.Kind.values()) {
            CoScalingFleet.KindBooks k = o.kind(kind);
            String p = kind.label();
            b.append(String.format(Locale.ROOT, " %s_svr=%.2f %s_scale_out_cold_starts=%d %s_failed_wake_cold_starts=%d %s_wakes=%d",
                    p, 100 * k.svr(), p, k.scaleOutColdStarts(), p, k.failedWakeColdStarts(), p, k.wakes()));
        }
        CoScalingFleet.KindBooks all = o.all();
        b.append(String.format(Locale.ROOT, " cold_starts=%d failed_wakes=%d wakes=%d evictions=%d parked_mem_gib_h=%.2f waiting_s=%.0f",
                all.coldStarts(), all.failedWakeColdStarts(), all.wakes(), o.evictions(), o.parkedGibSeconds() / 3600,
                o.waitingSeconds()));
        return b.toString();
    }
}
