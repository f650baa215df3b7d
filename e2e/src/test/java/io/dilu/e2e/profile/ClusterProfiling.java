package io.dilu.e2e.profile;

import io.dilu.kube.profile.GpuFunctionProfile;
import io.dilu.kube.profile.ProfileSpec;
import io.dilu.kube.profile.ProfileStatus;
import io.dilu.kube.profile.TrialRecord;
import io.dilu.testing.KubeClients;
import io.dilu.trials.EmulatedModel;
import io.dilu.trials.EmulatedModels;
import io.fabric8.kubernetes.api.model.NamespaceBuilder;
import io.fabric8.kubernetes.api.model.ObjectMetaBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * {@code ./dilu profile --function NAME} on the local cluster ({@code ./dilu cluster up}): creates a
 * GpuFunctionProfile for an emulated model with only a spec (the workload image and the model's trial command)
 * and follows the shipped profiler as it runs the trials as pods on the cluster's emulated GPUs, printing each
 * trial as it lands in the status and the settings found. The profile stays in namespace {@value #NS}.
 *
 * <p>Usage: {@code ClusterProfiling --function NAME} (an emulated model, or {@code all}).
 */
public final class ClusterProfiling {

    static final String NS = "dilu-profiles";
    static final Path DIR = Path.of(System.getProperty("dilu.cluster.dir", "/var/lib/dilu-cluster"));

    private ClusterProfiling() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 2 || !args[0].equals("--function")) {
            throw new IllegalArgumentException("usage: profile --function NAME, NAME one of " + String.join(", ", EmulatedModels.names())
                    + " or all");
        }
        List<EmulatedModel> models = args[1].equals("all") ? EmulatedModels.ALL : List.of(EmulatedModels.named(args[1])
                .orElseThrow(() -> new IllegalArgumentException("--function=" + args[1] + " is not allowed: must be one of "
                        + String.join(", ", EmulatedModels.names()) + " or all")));
        try (KubernetesClient client = KubeClients.fromKubeconfig(DIR.resolve("admin.kubeconfig"))) {
            client.namespaces().resource(new NamespaceBuilder().withNewMetadata().withName(NS)
                    .addToLabels("dilu.io/webhook", "enabled").endMetadata().build()).serverSideApply();
            int failed = 0;
            for (EmulatedModel m : models) {
                failed += profile(client, m) ? 0 : 1;
            }
            if (failed > 0) {
                System.err.println("profile: " + failed + " of " + models.size() + " profiles Failed (above)");
                System.exit(1);
            }
        }
    }

    static ProfileSpec spec(EmulatedModel m) {
        return m.profileSpec();
    }

    /** Profiles one model; whether its profile became Ready. */
    private static boolean profile(KubernetesClient client, EmulatedModel m) throws InterruptedException {
        var profiles = client.resources(GpuFunctionProfile.class).inNamespace(NS);
        // A fresh profile each run: its trials are this run's.
        profiles.withName(m.name()).withTimeout(1, TimeUnit.MINUTES).delete();
        profiles.resource(new GpuFunctionProfile(new ObjectMetaBuilder().withName(m.name()).build(), spec(m), null)).create();
        System.out.printf(Locale.ROOT, "%s (%s): profiling by trial pods on the cluster's emulated GPUs%n", m.name(), m.basis());
        int shown = 0;
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(30);
        GpuFunctionProfile p = profiles.withName(m.name()).get();
        while (!p.conditionTrue(GpuFunctionProfile.READY) && !p.conditionTrue(GpuFunctionProfile.FAILED)) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(m.name() + ": neither Ready nor Failed after 30 minutes: " + p.getStatus());
            }
            Thread.sleep(500);
            p = profiles.withName(m.name()).get();
            shown = print(p.getStatus(), shown);
        }
        ProfileStatus s = p.getStatus();
        print(s, shown);
        if (p.conditionTrue(GpuFunctionProfile.FAILED)) {
            var c = p.condition(GpuFunctionProfile.FAILED).orElseThrow();
            System.out.printf("%s: Failed: %s: %s%n", m.name(), c.getReason(), c.getMessage());
            System.out.printf(Locale.ROOT, "BENCH profile-cluster model=%s ready=false trials=%d gpu=emulated%n", m.name(),
                    s.trials() == null ? 0 : s.trials().size());
            return false;
        }
        System.out.printf(Locale.ROOT, "%s: Ready: SM request %d%%, limit %d%%, batch %d, memory %d MiB%s after %d trials%n",
                m.name(), s.smRequest(), s.smLimit(), s.batchSize(), s.memoryMiB(),
                s.servingThroughputRps() == null ? "" : String.format(Locale.ROOT, ", %.1f rps per instance%s", s.servingThroughputRps(),
                        s.servingThroughputRpsAtLimit() == null ? ""
                                : String.format(Locale.ROOT, " (%.1f at its limit)", s.servingThroughputRpsAtLimit())),
                s.searchTrials());
        System.out.printf(Locale.ROOT, "BENCH profile-cluster model=%s ready=true trials=%d sm_request=%d sm_limit=%d batch=%d gpu=emulated%n",
                m.name(), s.searchTrials(), s.smRequest(), s.smLimit(), s.batchSize());
        return true;
    }

    /** Prints the trials after the first {@code shown}; returns how many are shown now. */
    private static int print(ProfileStatus s, int shown) {
        List<TrialRecord> trials = s == null || s.trials() == null ? List.of() : s.trials();
        for (int i = shown; i < trials.size(); i++) {
            TrialRecord t = trials.get(i);
            System.out.printf(Locale.ROOT, "  trial %2d: SM %3d%% batch %3d  %s  (%s, %s)%n", i + 1, t.smPercent(), t.batchSize(),
                    t.latencyMillis() == null ? "failed: " + t.error()
                            : String.format(Locale.ROOT, "%8.2f ms  %9.1f /s  %6d MiB", t.latencyMillis(), t.throughput(), t.memoryMiB()),
                    t.pod(), t.gpu());
        }
        return trials.size();
    }
}
