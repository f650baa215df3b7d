package io.dilu.webhook.admission;

import io.dilu.kube.profile.ProfileSettings;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.dilu.core.contract.DiluNames;
import io.dilu.core.contract.KnativeNames;
import io.dilu.core.contract.PodQuotaAnnotations;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.zjsonpatch.JsonPatch;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.Optional;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;

class PodMutatorTest {

    static final ObjectMapper JSON = new ObjectMapper();

    static String env(Container c, String name) {
        return c.getEnv().stream().filter(e -> e.getName().equals(name)).findFirst()
                .map(e -> e.getValue() != null ? e.getValue() : e.getValueFrom().getFieldRef().getFieldPath()).orElse(null);
    }

    static Pod serving(int sm) {
        return Pods.gpuPod(sm, 2048).editMetadata().withLabels(Map.of(KnativeNames.SERVICE_LABEL, "resnet")).endMetadata().build();
    }

    @Test
    void aGpuPodGetsTheHookItsIdentityTheSchedulerAndDefaults() {
        Pod pod = serving(30);
        Pod m = PodMutator.mutate(pod, Optional.empty(), Pods.HOOK, true, Pods.ETA_VIOLATION).pod();
        Container c = m.getSpec().getContainers().getFirst();
        assertThat(env(c, "LD_PRELOAD")).isEqualTo("/opt/dilu/lib/libdilu-hook.so");
        assertThat(env(c, "DILU_POD_UID")).isEqualTo("metadata.uid");
        assertThat(env(c, "DILU_POD_NAME")).isEqualTo("metadata.name");
        assertThat(env(c, "DILU_POD_NAMESPACE")).isEqualTo("metadata.namespace");
        // The device plugin mounts the hook at Allocate: no hostPath (Pod Security "baseline" refuses it), no mount.
        assertThat(m.getSpec().getVolumes()).isEmpty();
        assertThat(c.getVolumeMounts()).isEmpty();
        assertThat(m.getSpec().getSchedulerName()).isEqualTo("dilu-scheduler");
        assertThat(m.getMetadata().getAnnotations()).containsEntry(DiluNames.SM_LIMIT, "60")
                .containsEntry(DiluNames.PRIORITY, "slo").containsEntry(DiluNames.FUNCTION, "resnet");
        assertThat(pod.getSpec().getContainers().getFirst().getEnv()).as("the original is left alone").isEmpty();
    }

    @Test
    void everyContainerAndInitContainerDropsChrootAndPtraceOnce() throws Exception {
        Pod pod = Pods.gpuPod(30, 2048).editSpec()
                .addNewContainer().withName("hardened").withImage("x").withNewSecurityContext().withNewCapabilities()
                .withDrop("ALL").withAdd("NET_BIND_SERVICE").endCapabilities().endSecurityContext().endContainer()
                .addNewContainer().withName("half").withImage("x").withNewSecurityContext().withNewCapabilities()
                .withDrop("NET_RAW", "CAP_SYS_PTRACE").endCapabilities().endSecurityContext().endContainer()
                .addNewInitContainer().withName("init").withImage("x").withNewSecurityContext().withRunAsUser(1000L)
                .endSecurityContext().endInitContainer().endSpec().build();
        PodMutator.Mutation m = PodMutator.mutate(pod, Optional.empty(), Pods.HOOK, false, Pods.ETA_VIOLATION);
        Function<Container, List<String>> drop = c -> c.getSecurityContext().getCapabilities().getDrop();
        List<Container> cs = m.pod().getSpec().getContainers();
        assertThat(drop.apply(cs.get(0))).containsExactly("SYS_CHROOT", "SYS_PTRACE");
        assertThat(drop.apply(cs.get(1))).as("ALL drops both already").containsExactly("ALL");
        // containerd reads CAP_SYS_PTRACE as CAP_CAP_SYS_PTRACE, which drops nothing: the bare name is added beside it.
        assertThat(drop.apply(cs.get(2))).as("appended, what it drops kept")
                .containsExactly("NET_RAW", "CAP_SYS_PTRACE", "SYS_CHROOT", "SYS_PTRACE");
        Container init = m.pod().getSpec().getInitContainers().getFirst();
        assertThat(drop.apply(init)).containsExactly("SYS_CHROOT", "SYS_PTRACE");
        assertThat(init.getSecurityContext().getRunAsUser()).isEqualTo(1000L);
        JsonNode patched = JsonPatch.apply(JSON.valueToTree(m.patch()), JSON.valueToTree(pod));
        assertThat((JsonNode) JSON.valueToTree(JSON.treeToValue(patched, Pod.class))).as("the patch says the same")
                .isEqualTo(JSON.valueToTree(m.pod()));
        assertThat(PodMutator.mutate(m.pod(), Optional.empty(), Pods.HOOK, false, Pods.ETA_VIOLATION).patch()).as("once").isEmpty();
        assertThat(PodMutator.mutate(new PodBuilder().withNewMetadata().withName("web").endMetadata().withNewSpec().addNewContainer()
                .withName("c").withImage("x").endContainer().endSpec().build(), Optional.empty(), Pods.HOOK, false, Pods.ETA_VIOLATION).patch())
                .as("a pod without a share is not Dilu's to change").isEmpty();
    }

    @Test
    void aPodOfDilusAutoscalingClassGetsAReadinessGateOnTheServingConditionOnce() throws Exception {
        Pod pod = Pods.gpuPod(30, 2048).editMetadata().withAnnotations(Map.of(KnativeNames.CLASS,
                DiluNames.AUTOSCALER_CLASS)).endMetadata().build();
        PodMutator.Mutation m = PodMutator.mutate(pod, Optional.empty(), Pods.HOOK, true, Pods.ETA_VIOLATION);
        assertThat(m.pod().getSpec().getReadinessGates()).extracting(g -> g.getConditionType())
                .containsExactly(DiluNames.SERVING_CONDITION);
        JsonNode patched = JsonPatch.apply(JSON.valueToTree(m.patch()), JSON.valueToTree(pod));
        assertThat(patched.at("/spec/readinessGates/0/conditionType").asText()).as("the patch says the same")
                .isEqualTo(DiluNames.SERVING_CONDITION);
        assertThat(PodMutator.mutate(m.pod(), Optional.empty(), Pods.HOOK, true, Pods.ETA_VIOLATION).patch()).as("once").isEmpty();

        Pod ownGate = new PodBuilder(pod).editSpec().addNewReadinessGate("example.com/warm").endSpec().build();
        assertThat(PodMutator.mutate(ownGate, Optional.empty(), Pods.HOOK, true, Pods.ETA_VIOLATION).pod().getSpec().getReadinessGates())
                .extracting(g -> g.getConditionType()).containsExactly("example.com/warm", DiluNames.SERVING_CONDITION);
        Pod kpa = Pods.gpuPod(30, 2048).editMetadata().withAnnotations(Map.of(KnativeNames.CLASS,
                KnativeNames.KPA_CLASS)).endMetadata().build();
        assertThat(PodMutator.mutate(kpa, Optional.empty(), Pods.HOOK, true, Pods.ETA_VIOLATION).pod().getSpec().getReadinessGates())
                .as("Knative's own class never parks").isEmpty();
    }

    @Test
    void servingPodsAreBestEffortWhereTheNamespaceLacksTheQuotaRight() {
        Pod m = PodMutator.mutate(serving(30), Optional.empty(), Pods.HOOK, false, Pods.ETA_VIOLATION).pod();
        assertThat(m.getMetadata().getAnnotations()).containsEntry(DiluNames.PRIORITY, "best-effort")
                .containsEntry(DiluNames.SM_LIMIT, "60");
    }

    @Test
    void aConfiguredRuntimeClassGoesToGpuPodsThatNameNoneOnly() {
        HookSettings nvidia = new HookSettings("/opt/dilu/lib", "libdilu-hook.so", "dilu-scheduler", Optional.of("nvidia"));
        PodMutator.Mutation m = PodMutator.mutate(Pods.gpuPod(30, 1024).build(), Optional.empty(), nvidia, false, Pods.ETA_VIOLATION);
        assertThat(m.pod().getSpec().getRuntimeClassName()).isEqualTo("nvidia");
        assertThat(m.patch()).contains(PatchOperation.add("/spec/runtimeClassName", "nvidia"));
        Pod own = Pods.gpuPod(30, 1024).editSpec().withRuntimeClassName("kata-nvidia").endSpec().build();
        assertThat(PodMutator.mutate(own, Optional.empty(), nvidia, false, Pods.ETA_VIOLATION).pod().getSpec().getRuntimeClassName())
                .as("the pod's own choice stays").isEqualTo("kata-nvidia");
        assertThat(PodMutator.mutate(Pods.gpuPod(30, 1024).build(), Optional.empty(), Pods.HOOK, false, Pods.ETA_VIOLATION).pod().getSpec()
                .getRuntimeClassName()).as("unset by default").isNull();
        Pod cpu = new PodBuilder().withNewMetadata().withName("cpu").endMetadata().withNewSpec().addNewContainer()
                .withName("c").withImage("i").endContainer().endSpec().build();
        assertThat(PodMutator.mutate(cpu, Optional.empty(), nvidia, false, Pods.ETA_VIOLATION).pod().getSpec().getRuntimeClassName())
                .as("a pod without a GPU share is not touched").isNull();
    }

    @Test
    void mutatingTwiceChangesNothingMoreAndUserChoicesStay() {
        Pod pod = Pods.gpuPod(70, 2048).editMetadata().withAnnotations(Map.of(DiluNames.SM_LIMIT, "80")).endMetadata()
                .editSpec().withSchedulerName("my-scheduler").editFirstContainer()
                .addToEnv(new EnvVar("LD_PRELOAD", "/usr/lib/libtcmalloc.so", null)).endContainer().endSpec().build();
        PodMutator.Mutation once = PodMutator.mutate(pod, Optional.empty(), Pods.HOOK, false, Pods.ETA_VIOLATION);
        PodMutator.Mutation twice = PodMutator.mutate(once.pod(), Optional.empty(), Pods.HOOK, false, Pods.ETA_VIOLATION);
        assertThat(twice.pod()).isEqualTo(once.pod());
        assertThat(twice.patch()).isEmpty();
        // The pod's own preload and scheduler stay as they are: the validator refuses them, by name.
        assertThat(env(once.pod().getSpec().getContainers().getFirst(), "LD_PRELOAD")).isEqualTo("/usr/lib/libtcmalloc.so");
        assertThat(once.pod().getSpec().getSchedulerName()).isEqualTo("my-scheduler");
        assertThat(once.pod().getMetadata().getAnnotations()).containsEntry(DiluNames.SM_LIMIT, "80")
                .containsEntry(DiluNames.PRIORITY, "best-effort");
    }

    @Test
    void aPodWithoutAShareIsNotTouched() {
        Pod plain = new PodBuilder().withNewMetadata().withName("web").endMetadata().withNewSpec().addNewContainer()
                .withName("c").withImage("nginx").endContainer().endSpec().build();
        assertThat(PodMutator.concerns(plain)).isFalse();
        PodMutator.Mutation m = PodMutator.mutate(plain, Optional.empty(), Pods.HOOK, true, Pods.ETA_VIOLATION);
        assertThat(m.pod()).isEqualTo(plain);
        assertThat(m.patch()).isEmpty();
    }

    @Test
    void aShareInAnInitContainerOnlyMakesThePodDilusButIsNotMutated() {
        Pod init = new PodBuilder().withNewMetadata().withName("sneaky").endMetadata().withNewSpec().addNewInitContainer()
                .withName("init").withImage("x").withNewResources().withLimits(Pods.share(500, 1024)).endResources().endInitContainer()
                .addNewContainer().withName("c").withImage("x").endContainer().endSpec().build();
        assertThat(PodMutator.concerns(init)).isTrue();
        assertThat(PodMutator.mutate(init, Optional.empty(), Pods.HOOK, false, Pods.ETA_VIOLATION).patch()).isEmpty();
    }

    @Test
    void aProfileFillsWhatThePodLeavesOut() {
        Pod pod = new PodBuilder().withNewMetadata().withName("bert-1").withAnnotations(Map.of(DiluNames.PROFILE, "bert"))
                .endMetadata().withNewSpec().addNewContainer().withName("c").withImage("bert").endContainer().endSpec().build();
        ProfileSettings bert = new ProfileSettings("bert", 25, Optional.of(45), 6144, Optional.of(8), Optional.of("slo"), false, Optional.empty(), Optional.empty());
        Pod m = PodMutator.mutate(pod, Optional.of(bert), Pods.HOOK, true, Pods.ETA_VIOLATION).pod();
        var limits = m.getSpec().getContainers().getFirst().getResources().getLimits();
        assertThat(limits.get(DiluNames.GPU_SM).toString()).isEqualTo("25");
        assertThat(limits.get(DiluNames.GPU_MEMORY).toString()).isEqualTo("6144");
        assertThat(m.getMetadata().getAnnotations()).containsEntry(DiluNames.SM_LIMIT, "45").containsEntry(DiluNames.BATCH_SIZE, "8")
                .containsEntry(DiluNames.PRIORITY, "slo").containsEntry(DiluNames.FUNCTION, "bert");
    }

    @Test
    void theProfilesBatchSizeReachesTheWorkloadUnlessItChoosesItsOwn() {
        ProfileSettings bert = new ProfileSettings("bert", 25, Optional.of(45), 6144, Optional.of(8), Optional.of("slo"), false, Optional.empty(), Optional.empty());
        Pod pod = new PodBuilder().withNewMetadata().withName("bert-1").withAnnotations(Map.of(DiluNames.PROFILE, "bert"))
                .endMetadata().withNewSpec().addNewContainer().withName("c").withImage("bert").endContainer().endSpec().build();
        assertThat(PodMutator.mutate(pod, Optional.of(bert), Pods.HOOK, true, Pods.ETA_VIOLATION).pod().getSpec().getContainers().getFirst().getEnv())
                .filteredOn(e -> e.getName().equals("DILU_BATCH_SIZE")).extracting(e -> e.getValue()).containsExactly("8");
        Pod own = new PodBuilder(pod).editSpec().editFirstContainer().addNewEnv().withName("DILU_BATCH_SIZE").withValue("2").endEnv()
                .endContainer().endSpec().build();
        assertThat(PodMutator.mutate(own, Optional.of(bert), Pods.HOOK, true, Pods.ETA_VIOLATION).pod().getSpec().getContainers().getFirst().getEnv())
                .filteredOn(e -> e.getName().equals("DILU_BATCH_SIZE")).extracting(e -> e.getValue()).containsExactly("2");
        ProfileSettings noBatch = new ProfileSettings("bert", 25, Optional.empty(), 6144, Optional.empty(), Optional.empty(), false, Optional.empty(), Optional.empty());
        assertThat(PodMutator.mutate(pod, Optional.of(noBatch), Pods.HOOK, true, Pods.ETA_VIOLATION).pod().getSpec().getContainers().getFirst().getEnv())
                .extracting(e -> e.getName()).doesNotContain("DILU_BATCH_SIZE");
    }

    @Test
    void aProfilesValuesThatNeedTheRightAreNotCopiedWithoutIt() {
        Pod pod = new PodBuilder().withNewMetadata().withName("bert-1").withAnnotations(Map.of(DiluNames.PROFILE, "bert"))
                .endMetadata().withNewSpec().addNewContainer().withName("c").withImage("bert").endContainer().endSpec().build();
        ProfileSettings greedy = new ProfileSettings("bert", 25, Optional.of(80), 6144, Optional.of(8), Optional.of("slo"), true,
                Optional.of(1.2), Optional.empty());
        Map<String, String> a = PodMutator.mutate(pod, Optional.of(greedy), Pods.HOOK, false, Pods.ETA_VIOLATION).pod().getMetadata().getAnnotations();
        // The limit falls back to the default 2 × 25, the priority to best-effort; the LLM mark and the low
        // threshold are left out. The validator refuses the profile by name (PodValidatorTest).
        assertThat(a).containsEntry(DiluNames.SM_LIMIT, "50").containsEntry(DiluNames.PRIORITY, "best-effort")
                .containsEntry(DiluNames.BATCH_SIZE, "8").doesNotContainKeys(DiluNames.LLM, DiluNames.KLC_THRESHOLD);
    }

    @Test
    void anLlmProfileMarksItsPodsAndCarriesItsThreshold() {
        Pod pod = new PodBuilder().withNewMetadata().withName("llama-1").withAnnotations(Map.of(DiluNames.PROFILE, "llama"))
                .endMetadata().withNewSpec().addNewContainer().withName("c").withImage("llama").endContainer().endSpec().build();
        ProfileSettings llama = new ProfileSettings("llama", 40, Optional.of(80), 30_000, Optional.of(1), Optional.of("slo"), true,
                Optional.of(1.25), Optional.empty());
        Pod m = PodMutator.mutate(pod, Optional.of(llama), Pods.HOOK, true, Pods.ETA_VIOLATION).pod();
        assertThat(m.getMetadata().getAnnotations()).containsEntry(DiluNames.LLM, "true")
                .containsEntry(DiluNames.KLC_THRESHOLD, "1.25");
        assertThat(PodQuotaAnnotations.klcThreshold(m.getMetadata().getAnnotations())).isEqualTo(1.25);
    }

    @Test
    void theDefaultLimitIsLeftToEachContainerWhereOnePodWideLimitWouldNeedTheRight() {
        Pod pod = Pods.gpuPod(50, 2048).editSpec().addNewContainer().withName("small").withImage("x").withNewResources()
                .withLimits(Pods.share(10, 1024)).endResources().endContainer().endSpec().build();
        assertThat(PodMutator.mutate(pod, Optional.empty(), Pods.HOOK, false, Pods.ETA_VIOLATION).pod().getMetadata().getAnnotations())
                .doesNotContainKey(DiluNames.SM_LIMIT);
        assertThat(PodMutator.mutate(pod, Optional.empty(), Pods.HOOK, true, Pods.ETA_VIOLATION).pod().getMetadata().getAnnotations())
                .containsEntry(DiluNames.SM_LIMIT, "100");
    }

    @Test
    void thePatchIsAddsAndReplacesWithEscapedPaths() {
        PodMutator.Mutation m = PodMutator.mutate(Pods.gpuPod(30, 2048).editMetadata().withAnnotations(Map.of("team", "a"))
                .endMetadata().editSpec().withSchedulerName("default-scheduler").endSpec().build(), Optional.empty(), Pods.HOOK, false, Pods.ETA_VIOLATION);
        assertThat(m.patch()).extracting(PatchOperation::op, PatchOperation::path).containsExactly(
                org.assertj.core.groups.Tuple.tuple("add", "/metadata/annotations/dilu.io~1sm-limit"),
                org.assertj.core.groups.Tuple.tuple("add", "/metadata/annotations/dilu.io~1priority"),
                org.assertj.core.groups.Tuple.tuple("replace", "/spec/schedulerName"),
                org.assertj.core.groups.Tuple.tuple("add", "/spec/securityContext"),
                org.assertj.core.groups.Tuple.tuple("add", "/spec/containers/0/securityContext"),
                org.assertj.core.groups.Tuple.tuple("add", "/spec/containers/0/env"));
        assertThat(PatchOperation.pointer("a/b", "c~d", 3, "-")).isEqualTo("/a~1b/c~0d/3/-");
    }

    /** Whatever shape the pod's JSON has (fields absent, null or empty), the patch applies and yields the mutation. */
    @Property(tries = 300)
    void thePatchAppliedToThePodYieldsTheMutatedPod(@ForAll("pods") ObjectNode json, @ForAll boolean quotaRights) throws Exception {
        Pod pod = JSON.treeToValue(json, Pod.class);
        Optional<ProfileSettings> profile = PodMutator.profileName(pod).map(n -> new ProfileSettings(n, 20, Optional.of(90), 2048,
                Optional.of(4), Optional.of("slo"), n.equals("llm"), Optional.empty(), Optional.empty()));
        PodMutator.Mutation m = PodMutator.mutate(pod, profile, Pods.HOOK, quotaRights, Pods.ETA_VIOLATION);
        JsonNode patched = JsonPatch.apply(JSON.valueToTree(m.patch()), json);
        assertThat((JsonNode) JSON.valueToTree(JSON.treeToValue(patched, Pod.class))).isEqualTo(JSON.valueToTree(m.pod()));
        assertThat(m.patch()).allSatisfy(op -> assertThat(op.op()).isIn("add", "replace"));
        // And the mutation never breaks the rights itself.
        Map<String, String> a = m.pod().getMetadata().getAnnotations() == null ? Map.of() : m.pod().getMetadata().getAnnotations();
        if (!quotaRights && pod.getMetadata().getAnnotations() != null) {
            assertThat(a.get(DiluNames.PRIORITY)).isIn(null, "best-effort", pod.getMetadata().getAnnotations().get(DiluNames.PRIORITY));
        }
    }

    @Provide
    Arbitrary<ObjectNode> pods() {
        Arbitrary<String> resources = Arbitraries.of("absent", "null", "{}", "{\"limits\":null}", "{\"limits\":{\"cpu\":\"1\"}}",
                "{\"limits\":{\"dilu.io/gpu-sm\":\"30\",\"dilu.io/gpu-memory\":\"2048\"}}",
                "{\"requests\":{\"dilu.io/gpu-sm\":\"40\"}}",
                "{\"limits\":{\"dilu.io/gpu-sm\":\"10\"},\"requests\":{\"dilu.io/gpu-sm\":\"10\",\"cpu\":\"1\"}}");
        Arbitrary<String> env = Arbitraries.of("absent", "null", "[]", "[{\"name\":\"FOO\",\"value\":\"x\"}]",
                "[{\"name\":\"DILU_POD_UID\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata.uid\"}}}]");
        Arbitrary<String> containerSecurity = Arbitraries.of("absent", "null", "{}", "{\"runAsUser\":1000}",
                "{\"capabilities\":null}", "{\"capabilities\":{}}", "{\"capabilities\":{\"drop\":null}}",
                "{\"capabilities\":{\"drop\":[]}}", "{\"capabilities\":{\"drop\":[\"NET_RAW\"]}}",
                "{\"capabilities\":{\"drop\":[\"ALL\"],\"add\":[\"NET_BIND_SERVICE\"]}}",
                "{\"capabilities\":{\"drop\":[\"cap_sys_chroot\"]}}");
        Arbitrary<ObjectNode> container = Combinators.combine(resources, env, containerSecurity, Arbitraries.strings().alpha().ofLength(3))
                .as((r, e, sc, name) -> {
                    ObjectNode c = JSON.createObjectNode().put("name", name).put("image", "img");
                    put(c, "resources", r);
                    put(c, "env", e);
                    put(c, "securityContext", sc);
                    return c;
                });
        Arbitrary<String> annotations = Arbitraries.of("absent", "null", "{}", "{\"team\":\"a/b~c\"}",
                "{\"dilu.io/sm-limit\":\"80\"}", "{\"dilu.io/profile\":\"bert\"}", "{\"dilu.io/profile\":\"llm\",\"dilu.io/priority\":\"slo\"}");
        Arbitrary<String> labels = Arbitraries.of("absent", "{\"" + KnativeNames.SERVICE_LABEL + "\":\"fn\"}");
        Arbitrary<String> scheduler = Arbitraries.of("absent", "\"\"", "\"default-scheduler\"", "\"mine\"", "\"dilu-scheduler\"");
        Arbitrary<String> security = Arbitraries.of("absent", "null", "{}", "{\"runAsUser\":1000}",
                "{\"seccompProfile\":{\"type\":\"Localhost\",\"localhostProfile\":\"fn.json\"}}");
        return Combinators.combine(container.list().ofMinSize(1).ofMaxSize(4), container.list().ofMaxSize(2), annotations, labels,
                scheduler, security).as((cs, inits, a, l, s, sc) -> {
            ObjectNode pod = JSON.createObjectNode().put("apiVersion", "v1").put("kind", "Pod");
            ObjectNode meta = pod.putObject("metadata").put("name", "p").put("namespace", "fns");
            put(meta, "annotations", a);
            put(meta, "labels", l);
            ObjectNode spec = pod.putObject("spec");
            ArrayNode list = spec.putArray("containers");
            cs.forEach(list::add);
            if (!inits.isEmpty()) {
                inits.forEach(spec.putArray("initContainers")::add);
            }
            put(spec, "schedulerName", s);
            put(spec, "securityContext", sc);
            return pod;
        });
    }

    private static void put(ObjectNode into, String field, String json) {
        if (!json.equals("absent")) {
            try {
                into.set(field, JSON.readTree(json));
            } catch (Exception e) {
                throw new IllegalArgumentException(json, e);
            }
        }
    }
}
