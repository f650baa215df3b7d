package io.dilu.e2e.demo;

import io.dilu.core.contract.AssignedGpus;
import io.dilu.core.contract.DiluNames;
import io.dilu.core.contract.KnativeNames;
import io.dilu.core.placement.GpuDevice;
import io.dilu.e2e.LocalControlPlane;
import io.dilu.testing.ChildProcess;
import io.dilu.testing.RealApiServer;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.GenericKubernetesResourceBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.IntStream;

/**
 * {@code ./dilu demo}: Dilu's control plane on this machine — a real kube-apiserver, kube-scheduler with the
 * Dilu extender, the admission webhook — with 4 nodes of 4 emulated A100-40GB GPUs (published as the node
 * agent publishes them), and 21 function instances of four kinds submitted as a user would. It prints what
 * the webhook made of a pod and where every instance landed, GPU by GPU. No GPU is needed; nothing runs on
 * the emulated GPUs here (there is no kubelet), so this shows admission and placement.
 */
public final class Demo {

    static final String NS = "functions";
    static final int NODES = 4;
    static final int GPUS = 4;

    record Function(String name, int instances, int sm, long memoryMib, int gpus, Map<String, String> labels,
            Map<String, String> annotations) {}

    public static void main(String[] args) throws Exception {
        Path work = Files.createTempDirectory("dilu-demo");
        System.out.println("Dilu demo: starting a local kube-apiserver, kube-scheduler + Dilu extender, and the webhook...");
        try (RealApiServer api = RealApiServer.start()) {
            KubernetesClient client = api.client();
            Path kubeconfig = api.writeKubeconfig(work.resolve("kubeconfig"));
            api.installCrd(RealApiServer.manifests().resolve("crds/gpufunctionprofiles.dilu.io.yaml"));
            // The functions are SLO-sensitive: the namespace has the right to slo priority (an administrator's label).
            api.createNamespace(NS, Map.of("dilu.io/webhook", "enabled", "dilu.io/allow-slo", "true"));
            for (int n = 0; n < NODES; n++) {
                String node = "gpu-node-" + n;
                LocalControlPlane.createGpuNode(client, node, IntStream.range(0, GPUS)
                        .mapToObj(g -> new GpuDevice("GPU-emu-" + node + "-" + g, g, "A100-40GB (emulated)", 40_960, 108)).toList());
            }
            client.genericKubernetesResources("dilu.io/v1alpha1", "GpuFunctionProfile").inNamespace(NS)
                    .resource(new GenericKubernetesResourceBuilder().withApiVersion("dilu.io/v1alpha1").withKind("GpuFunctionProfile")
                            .withNewMetadata().withName("bert-base").endMetadata()
                            .addToAdditionalProperties("spec", Map.of("function", "bert-base", "smRequest", 25, "smLimit", 50,
                                    "memoryMiB", 6144, "batchSize", 8, "priority", "slo", "servingThroughputRps", 120)).build())
                    .create();

            int extenderPort = LocalControlPlane.freePort();
            try (ChildProcess extender = LocalControlPlane.startExtender(kubeconfig, extenderPort, work.resolve("extender.log"));
                    ChildProcess scheduler = LocalControlPlane.startScheduler(client, kubeconfig, extenderPort, work,
                            work.resolve("kube-scheduler.log"));
                    // The extender runs with the admin's credentials here: they write dilu.io/assigned-gpus.
                    ChildProcess webhook = LocalControlPlane.startWebhook(client, kubeconfig, work, work.resolve("webhook.log"),
                            Map.of("DILU_WEBHOOK_ASSIGNED_GPUS_WRITERS", LocalControlPlane.adminUser(client)))) {
                // The training jobs run already when the functions scale out onto the cluster: each function's later
                // instances follow the job its first one sits beside (workload affinity, §3.3).
                List<Function> functions = List.of(
                        new Function("gpt2-train", 3, 40, 12_288, 2, Map.of("app", "gpt2-train"), Map.of()),
                        new Function("resnet50", 8, 30, 4096, 1, Map.of(KnativeNames.SERVICE_LABEL, "resnet50"), Map.of()),
                        new Function("bert-base", 6, 0, 0, 1, Map.of("serving.kserve.io/inferenceservice", "bert-base"),
                                Map.of("dilu.io/profile", "bert-base")),
                        new Function("llama-7b", 4, 50, 16_384, 1, Map.of(KnativeNames.SERVICE_LABEL, "llama-7b"), Map.of()));
                int submitted = 0;
                for (Function f : functions) {
                    for (int i = 0; i < f.instances(); i++) {
                        submit(client, f, i);
                        submitted++;
                    }
                }
                // Wait until every instance is bound, or nothing has moved for 15 s (a pod that cannot be placed).
                List<Pod> pods;
                long lastBound = -1;
                long lastChange = System.nanoTime();
                while (true) {
                    pods = client.pods().inNamespace(NS).list().getItems();
                    long bound = pods.stream().filter(p -> p.getSpec().getNodeName() != null).count();
                    if (bound != lastBound) {
                        lastBound = bound;
                        lastChange = System.nanoTime();
                    }
                    if (bound == submitted || System.nanoTime() - lastChange > 15_000_000_000L) {
                        break;
                    }
                    Thread.sleep(300);
                }
                report(pods, submitted);
            }
        }
    }

    static void submit(KubernetesClient client, Function f, int i) {
        PodBuilder b = new PodBuilder().withNewMetadata().withName(f.name() + "-" + i).withNamespace(NS)
                .withLabels(f.labels()).withAnnotations(f.annotations()).endMetadata()
                .withNewSpec().withAutomountServiceAccountToken(false).endSpec();
        for (int c = 0; c < f.gpus(); c++) {
            var container = b.editSpec().addNewContainer().withName(f.gpus() == 1 ? "server" : "worker-" + c)
                    .withImage("registry.example.com/" + f.name() + ":1");
            if (f.sm() > 0) {
                Map<String, Quantity> share = Map.of(DiluNames.GPU_SM, new Quantity(Integer.toString(f.sm())),
                        DiluNames.GPU_MEMORY, new Quantity(Long.toString(f.memoryMib())));
                container = container.withNewResources().withRequests(share).withLimits(share).endResources();
            }
            container.endContainer().endSpec();
        }
        client.pods().inNamespace(NS).resource(b.build()).create();
    }

    static void report(List<Pod> pods, int submitted) {
        Pod sample = pods.stream().filter(p -> p.getMetadata().getName().equals("bert-base-0")).findFirst().orElse(pods.getFirst());
        System.out.println();
        System.out.println("What the webhook made of " + sample.getMetadata().getName() + " (submitted with only dilu.io/profile: bert-base):");
        var c = sample.getSpec().getContainers().getFirst();
        System.out.println("  schedulerName: " + sample.getSpec().getSchedulerName());
        System.out.println("  resources: " + c.getResources().getLimits());
        for (EnvVar e : c.getEnv()) {
            System.out.println("  env " + e.getName() + "=" + (e.getValue() != null ? e.getValue() : "(from " + e.getValueFrom().getFieldRef().getFieldPath() + ")"));
        }
        new TreeMap<>(sample.getMetadata().getAnnotations()).forEach((k, v) -> System.out.println("  annotation " + k + ": " + v));

        Map<String, List<String>> byGpu = new TreeMap<>();
        Map<String, int[]> sums = new TreeMap<>();
        int containers = 0;
        for (Pod p : pods) {
            String assigned = p.getMetadata().getAnnotations() == null ? null : p.getMetadata().getAnnotations().get(DiluNames.ASSIGNED_GPUS);
            if (assigned == null) {
                continue;
            }
            AssignedGpus gpus = AssignedGpus.parse(assigned);
            int limit = Integer.parseInt(p.getMetadata().getAnnotations().get(DiluNames.SM_LIMIT));
            for (int i = 0; i < p.getSpec().getContainers().size(); i++) {
                var limits = p.getSpec().getContainers().get(i).getResources().getLimits();
                String gpu = gpus.forContainer(i).orElseThrow();
                int sm = limits.get(DiluNames.GPU_SM).getNumericalAmount().intValue();
                int mem = limits.get(DiluNames.GPU_MEMORY).getNumericalAmount().intValue();
                byGpu.computeIfAbsent(gpu, g -> new ArrayList<>()).add(p.getMetadata().getName() + " (" + sm + "%)");
                int[] s = sums.computeIfAbsent(gpu, g -> new int[3]);
                s[0] += sm;
                s[1] += limit;
                s[2] += mem;
                containers++;
            }
        }
        long bound = pods.stream().filter(p -> p.getSpec().getNodeName() != null).count();
        System.out.println();
        System.out.printf("Placement by the dilu-scheduler (%d of %d instances bound; %d nodes × %d EMULATED A100-40GB):%n",
                bound, submitted, NODES, GPUS);
        System.out.printf("  %-26s %8s %8s %10s  %s%n", "GPU", "Σrequest", "Σlimit", "memory", "instances");
        byGpu.forEach((gpu, list) -> {
            int[] s = sums.get(gpu);
            System.out.printf("  %-26s %7d%% %7d%% %6d MiB  %s%n", gpu, s[0], s[1], s[2], String.join(", ", list));
        });
        System.out.printf("%n%d GPU shares on %d GPUs; a GPU per instance would take %d.%n", containers, byGpu.size(), containers);
        pods.stream().filter(p -> p.getSpec().getNodeName() == null).forEach(p -> System.out.println("Pending "
                + p.getMetadata().getName() + ": " + p.getStatus().getConditions().stream()
                .filter(cond -> "PodScheduled".equals(cond.getType())).map(cond -> cond.getMessage()).findFirst().orElse("not scheduled yet")));
        System.out.println("(Default limits are 2 × request, and Σlimit per GPU may reach γ = 150%: that, more than the"
                + " requests, decides how many instances share a GPU here.)");
    }
}
