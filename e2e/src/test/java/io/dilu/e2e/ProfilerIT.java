package io.dilu.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dilu.core.contract.DiluNames;
import io.dilu.core.placement.GpuDevice;
import io.dilu.core.profiling.TrialReport;
import io.dilu.kube.InventoryAnnotation;
import io.dilu.kube.profile.GpuFunctionProfile;
import io.dilu.kube.profile.ProfileSpec;
import io.dilu.kube.profile.ProfileStatus;
import io.dilu.kube.profile.TrialRecord;
import io.dilu.testing.ChildProcess;
import io.dilu.testing.RealApiServer;
import io.fabric8.kubernetes.api.model.BindingBuilder;
import io.fabric8.kubernetes.api.model.ContainerStatusBuilder;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.ObjectMetaBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.PodStatusBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Profiling as a Kubernetes workflow, on a real kube-apiserver: the autoscaler (its own process, profiler on at
 * its defaults) and the webhook (its own process, registered on the API server). The test plays the kubelet of one
 * GPU node: it binds each trial pod to the node and runs the pod's command as a real process on the emulated GPU
 * with the pod's environment (the share pinned by the pod's CUDA_MPS_ACTIVE_THREAD_PERCENTAGE, which the emulator
 * honours; no node agent runs here), then writes what the process wrote to DILU_TRIAL_RESULT into the pod's
 * termination message, as a kubelet does. Every figure is from the emulated GPU.
 */
class ProfilerIT {

    static final String NS = "fns";
    static final String GPU_MODEL = "A100-40GB";
    static final String MISSING_IMAGE = "registry.local/missing:1";
    static final Path LOGS = Path.of("target", "it-logs");
    static final Path NATIVE = Path.of(System.getProperty("dilu.native.dir", "../hook-native/target/cmake")).toAbsolutePath();

    static RealApiServer api;
    static KubernetesClient client;
    static ChildProcess autoscaler;
    static ChildProcess webhook;
    /** Every trial pod the kubelet saw, as created (after admission). */
    static final List<Pod> trialPods = new CopyOnWriteArrayList<>();
    static final Set<String> handled = ConcurrentHashMap.newKeySet();
    static final ScheduledExecutorService kubelet = Executors.newSingleThreadScheduledExecutor();
    static final ExecutorService containers = Executors.newFixedThreadPool(2);

    @TempDir
    static Path tmp;

    @BeforeAll
    static void start() throws Exception {
        Files.createDirectories(LOGS);
        assertThat(NATIVE.resolve("bin/emu-infer")).as("emu-infer, built by hook-native").isExecutable();
        api = RealApiServer.start();
        client = api.client();
        api.installCrd(RealApiServer.manifests().resolve("crds/gpufunctionprofiles.dilu.io.yaml"));
        api.createNamespace(NS, Map.of("dilu.io/webhook", "enabled", "dilu.io/allow-slo", "true"));
        api.createNamespace("dilu-system", Map.of());
        client.nodes().resource(new NodeBuilder().withNewMetadata().withName("gpu-node").withAnnotations(Map.of(
                DiluNames.GPU_INVENTORY, InventoryAnnotation.write(List.of(new GpuDevice(GpuDevice.EMULATED_UUID_PREFIX + "gpu-node-0", 0, GPU_MODEL, 40_960, 108)))))
                .endMetadata().build()).create();
        Path kubeconfig = api.writeKubeconfig(tmp.resolve("kubeconfig"));
        webhook = LocalControlPlane.startWebhook(client, kubeconfig, tmp, LOGS.resolve("profiler-webhook.log"));
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        autoscaler = ChildProcess.quarkusApp("autoscaler", Map.of("KUBECONFIG", kubeconfig.toString(),
                "QUARKUS_HTTP_PORT", Integer.toString(port)), LOGS.resolve("profiler-autoscaler.log"));
        kubelet.scheduleWithFixedDelay(ProfilerIT::playKubelet, 0, 100, TimeUnit.MILLISECONDS);
    }

    @AfterAll
    static void stop() throws Exception {
        kubelet.shutdownNow();
        containers.shutdownNow();
        for (ChildProcess p : new ChildProcess[] {autoscaler, webhook}) {
            if (p != null) {
                p.close();
            }
        }
        if (api != null) {
            api.close();
        }
    }

    /** Binds new trial pods to the node and runs each; a missing image is reported as the kubelet would. */
    static void playKubelet() {
        try {
            for (Pod pod : client.pods().inNamespace(NS).withLabel("dilu.io/role", "profiling-trial").list().getItems()) {
                if (!handled.add(pod.getMetadata().getUid())) {
                    continue;
                }
                trialPods.add(pod);
                client.bindings().inNamespace(NS).resource(new BindingBuilder().withNewMetadata().withName(pod.getMetadata().getName())
                        .endMetadata().withNewTarget().withKind("Node").withName("gpu-node").endTarget().build()).create();
                containers.submit(() -> run(pod));
            }
        } catch (RuntimeException e) {
            // the next round sees the pods again
        }
    }

    static void run(Pod pod) {
        try {
            var c = pod.getSpec().getContainers().getFirst();
            ContainerStatusBuilder status = new ContainerStatusBuilder().withName(c.getName()).withImage(c.getImage());
            String phase;
            if (MISSING_IMAGE.equals(c.getImage())) {
                phase = "Pending";
                status.withNewState().withNewWaiting().withReason("ErrImagePull")
                        .withMessage("failed to pull and unpack image \"" + MISSING_IMAGE + "\": not found").endWaiting().endState();
            } else {
                Path dir = Files.createTempDirectory(tmp, "trial");
                Path result = dir.resolve("termination-log");
                List<String> command = new ArrayList<>(c.getCommand());
                command.set(0, NATIVE.resolve("bin").resolve(command.getFirst()).toString());
                ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(dir.resolve("out").toFile());
                Map<String, String> env = new HashMap<>();
                for (EnvVar e : c.getEnv()) {
                    if (e.getValue() != null && !e.getName().equals("LD_PRELOAD")) {
                        env.put(e.getName(), e.getValue());
                    }
                }
                env.put(TrialReport.RESULT_ENV, result.toString());
                env.put("DILU_EMU_DIR", dir.toString());
                env.put("DILU_EMU_LOG", "off");
                pb.environment().putAll(env);
                Process p = pb.start();
                int exit = p.waitFor(120, TimeUnit.SECONDS) ? p.exitValue() : -1;
                String message = Files.exists(result) ? Files.readString(result, StandardCharsets.UTF_8) : "";
                phase = exit == 0 ? "Succeeded" : "Failed";
                status.withNewState().withNewTerminated().withExitCode(exit).withMessage(message).endTerminated().endState();
            }
            Pod current = client.pods().inNamespace(NS).withName(pod.getMetadata().getName()).get();
            if (current != null) {
                current.setStatus(new PodStatusBuilder().withPhase(phase).withContainerStatuses(status.build()).build());
                client.pods().inNamespace(NS).resource(current).updateStatus();
            }
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    static GpuFunctionProfile create(String name, ProfileSpec spec) {
        return client.resources(GpuFunctionProfile.class).inNamespace(NS)
                .resource(new GpuFunctionProfile(new ObjectMetaBuilder().withName(name).build(), spec, null)).create();
    }

    static GpuFunctionProfile awaitCondition(String name, String condition) {
        await().atMost(Duration.ofMinutes(4)).pollInterval(Duration.ofMillis(500)).until(() -> {
            GpuFunctionProfile p = client.resources(GpuFunctionProfile.class).inNamespace(NS).withName(name).get();
            return p != null && p.conditionTrue(condition);
        });
        return client.resources(GpuFunctionProfile.class).inNamespace(NS).withName(name).get();
    }

    static List<Pod> podsOf(String profile) {
        return trialPods.stream().filter(p -> profile.equals(p.getMetadata().getAnnotations().get("dilu.io/trial-of"))).toList();
    }

    /** Every trial ran as a pod with its share pinned: request = limit = the trial's SM, and the MPS limit too. */
    static void assertPinned(List<Pod> pods, List<TrialRecord> trials) {
        assertThat(pods).hasSameSizeAs(trials);
        for (Pod pod : pods) {
            var c = pod.getSpec().getContainers().getFirst();
            String sm = c.getResources().getLimits().get(DiluNames.GPU_SM).toString();
            assertThat(pod.getMetadata().getAnnotations()).containsEntry(DiluNames.SM_LIMIT, sm);
            assertThat(c.getResources().getLimits().get(DiluNames.GPU_MEMORY).toString()).as("the whole GPU's memory").isEqualTo("40960");
            assertThat(c.getEnv()).anySatisfy(e -> {
                assertThat(e.getName()).isEqualTo("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
                assertThat(e.getValue()).isEqualTo(sm);
            });
            assertThat(c.getEnv()).as("the webhook injected the hook").anySatisfy(e -> assertThat(e.getName()).isEqualTo("LD_PRELOAD"));
        }
        assertThat(trials).allSatisfy(t -> {
            assertThat(t.gpu()).as("labelled emulated").isEqualTo("emulated " + GPU_MODEL);
            assertThat(t.pod()).isNotBlank();
            assertThat(pods).anySatisfy(p -> assertThat(p.getMetadata().getName()).isEqualTo(t.pod()));
        });
    }

    @Test
    void anInferenceProfileWithOnlyASpecIsProfiledByTrialPodsAndItsPodsAreAdmittedWithTheResult() {
        create("resnet", ProfileSpec.toProfile("resnet", "inference", "registry.local/emu:1", List.of("emu-infer", "--trial-batches", "3",
                "--kernels", "4", "--blocks", "54", "--blocks-per-item", "27", "--block-us", "250", "--memory-mib", "1500",
                "--memory-per-item-mib", "100"), 40, null));
        GpuFunctionProfile ready = awaitCondition("resnet", GpuFunctionProfile.READY);
        ProfileStatus s = ready.getStatus();
        assertThat(s.trials()).hasSize(s.searchTrials()).hasSizeLessThanOrEqualTo(12 + 1);
        assertPinned(podsOf("resnet"), s.trials());
        TrialRecord chosen = s.trials().stream().filter(t -> t.smPercent().equals(s.smRequest()) && t.batchSize().equals(s.batchSize()))
                .findFirst().orElseThrow();
        assertThat(chosen.latencyMillis()).as("a batch executes within half the SLO").isLessThanOrEqualTo(20);
        assertThat(s.memoryMiB()).isEqualTo(1500 + 100L * s.batchSize());
        assertThat(s.smLimit()).isEqualTo(Math.min(100, 2 * s.smRequest()));
        // The rate at the limit, from a trial pod pinned there at the chosen batch (the last one, unless the search ran it).
        TrialRecord atLimit = s.trials().stream().filter(t -> t.smPercent().equals(s.smLimit()) && t.batchSize().equals(s.batchSize()))
                .findFirst().orElseThrow();
        assertThat(s.servingThroughputRpsAtLimit()).isGreaterThanOrEqualTo(s.servingThroughputRps())
                .isCloseTo(Math.max(s.servingThroughputRps(), s.batchSize() / (atLimit.latencyMillis() / 1000)),
                        org.assertj.core.data.Offset.offset(1e-6));
        assertThat(ready.settings().orElseThrow().servingThroughputRpsAtLimit()).contains(s.servingThroughputRpsAtLimit());
        assertThat(ready.getMetadata().getGeneration()).isEqualTo(s.observedGeneration());
        await().atMost(Duration.ofSeconds(30)).until(() -> client.pods().inNamespace(NS).withLabel("dilu.io/role", "profiling-trial")
                .list().getItems().isEmpty());

        // A pod naming the profile gets the profiled quotas, and the batch size reaches the workload.
        await().atMost(Duration.ofSeconds(20)).ignoreExceptions().until(() -> client.pods().inNamespace(NS).resource(new PodBuilder()
                .withNewMetadata().withName("resnet-1").withAnnotations(Map.of("dilu.io/profile", "resnet")).endMetadata()
                .withNewSpec().addNewContainer().withName("server").withImage("registry.local/emu:1").endContainer().endSpec().build())
                .create() != null);
        Pod admitted = client.pods().inNamespace(NS).withName("resnet-1").get();
        var c = admitted.getSpec().getContainers().getFirst();
        assertThat(c.getResources().getLimits().get(DiluNames.GPU_SM).toString()).isEqualTo(s.smRequest().toString());
        assertThat(c.getResources().getLimits().get(DiluNames.GPU_MEMORY).toString()).isEqualTo(s.memoryMiB().toString());
        assertThat(admitted.getMetadata().getAnnotations()).containsEntry(DiluNames.SM_LIMIT, s.smLimit().toString())
                .containsEntry(DiluNames.BATCH_SIZE, s.batchSize().toString());
        assertThat(c.getEnv()).anySatisfy(e -> {
            assertThat(e.getName()).isEqualTo(TrialReport.BATCH_SIZE_ENV);
            assertThat(e.getValue()).isEqualTo(s.batchSize().toString());
        });
    }

    @Test
    void aTrainingJobIsProfiledByBinarySearch() {
        create("trainer", ProfileSpec.toProfile("trainer", "training", "registry.local/emu:1", List.of("emu-train", "--trial",
                "--iterations", "3", "--kernels", "4", "--blocks", "2160", "--block-us", "20", "--gap-ms", "2"), null, null));
        ProfileStatus s = awaitCondition("trainer", GpuFunctionProfile.READY).getStatus();
        assertThat(s.trials()).hasSize(s.searchTrials());
        assertPinned(podsOf("trainer"), s.trials());
        assertThat(s.smRequest()).isLessThan(s.smLimit());
        assertThat(s.batchSize()).isEqualTo(1);
        double exclusive = s.trials().stream().filter(t -> t.smPercent() == 100).findFirst().orElseThrow().throughput();
        double atRequest = s.trials().stream().filter(t -> t.smPercent().equals(s.smRequest())).findFirst().orElseThrow().throughput();
        assertThat(atRequest / exclusive).isBetween(0.78, 1.0);
        assertThat(s.servingThroughputRps()).as("a training job is not served").isNull();
        assertThat(s.servingThroughputRpsAtLimit()).isNull();
    }

    @Test
    void aFunctionWhoseImageFailsGetsFailedWithTheReason() {
        create("broken", ProfileSpec.toProfile("broken", "inference", MISSING_IMAGE, List.of("serve"), 100, null));
        GpuFunctionProfile failed = awaitCondition("broken", GpuFunctionProfile.FAILED);
        var condition = failed.condition(GpuFunctionProfile.FAILED).orElseThrow();
        assertThat(condition.getReason()).isEqualTo("TrialFailed");
        assertThat(condition.getMessage()).contains("ErrImagePull").contains(MISSING_IMAGE);
        assertThat(failed.conditionTrue(GpuFunctionProfile.READY)).isFalse();
        assertThat(failed.settings()).isEmpty();
        assertThat(podsOf("broken")).hasSize(1);
    }
}
