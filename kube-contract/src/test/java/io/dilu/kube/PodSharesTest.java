package io.dilu.kube;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.core.contract.DiluNames;
import io.dilu.core.contract.KnativeNames;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class PodSharesTest {

    static PodBuilder pod() {
        return new PodBuilder().withNewMetadata().withName("fn-abc").withNamespace("ns").withUid("u1").endMetadata()
                .withNewSpec().endSpec();
    }

    @Test
    void readsTheSharesOfTheGpuContainersInOrder() {
        Pod pod = pod().editMetadata().withLabels(Map.of(KnativeNames.SERVICE_LABEL, "resnet")).endMetadata()
                .editSpec().withNodeName("n1")
                .addNewContainer().withName("sidecar").endContainer()
                .addNewContainer().withName("a").withNewResources().withLimits(Map.of(DiluNames.GPU_SM, new Quantity("30"),
                        DiluNames.GPU_MEMORY, new Quantity("2048"))).endResources().endContainer()
                .addNewContainer().withName("b").withNewResources().withRequests(Map.of(DiluNames.GPU_SM, new Quantity("30")))
                        .withLimits(Map.of(DiluNames.GPU_SM, new Quantity("30"))).endResources().endContainer()
                .endSpec().build();
        PodShare share = PodShares.of(pod).orElseThrow();
        assertThat(share.function()).as("within its namespace").isEqualTo("ns/resnet");
        assertThat(share.nodeName()).contains("n1");
        assertThat(share.containers()).containsExactly(new PodShare.Container("a", 30, Optional.of(2048L)),
                new PodShare.Container("b", 30, Optional.empty()));
    }

    @Test
    void aDeletedPodHoldsItsShareUntilItsContainersEnded() {
        // Issue 45, escape 2: a deleted pod's containers run on for a grace period the tenant sets.
        Pod running = pod().editMetadata().withDeletionTimestamp("2026-12-02T10:00:00Z").withDeletionGracePeriodSeconds(86_400L)
                .endMetadata().editSpec().withNodeName("n1").addNewContainer().withName("c").endContainer()
                .addNewInitContainer().withName("init").endInitContainer().endSpec()
                .withNewStatus().withPhase("Running")
                .addNewInitContainerStatus().withName("init").withNewState().withNewTerminated().withExitCode(0)
                        .endTerminated().endState().endInitContainerStatus()
                .addNewContainerStatus().withName("c").withNewState().withNewRunning().endRunning().endState()
                        .endContainerStatus().endStatus().build();
        assertThat(PodShares.terminal(running)).as("being deleted, its container running").isFalse();
        Pod ended = new PodBuilder(running).editStatus().editFirstContainerStatus().withNewState().withNewTerminated()
                .withExitCode(137).endTerminated().endState().endContainerStatus().endStatus().build();
        assertThat(PodShares.terminal(ended)).as("every container terminated").isTrue();
        Pod unknown = new PodBuilder(running).editStatus().withContainerStatuses(List.of()).endStatus().build();
        assertThat(PodShares.terminal(unknown)).as("no word from the kubelet on its container").isFalse();
        Pod unbound = new PodBuilder(running).editSpec().withNodeName(null).endSpec().build();
        assertThat(PodShares.terminal(unbound)).as("never bound: nothing runs").isTrue();
        Pod failed = new PodBuilder(running).editMetadata().withDeletionTimestamp(null).endMetadata().editStatus()
                .withPhase("Failed").endStatus().build();
        assertThat(PodShares.terminal(failed)).isTrue();
        assertThat(PodShares.terminal(new PodBuilder(running).editMetadata().withDeletionTimestamp(null).endMetadata().build()))
                .isFalse();
    }

    @Test
    void readsParkingFromTheAnnotationsAndTheServingGateFromTheSpec() {
        Pod parked = pod().editMetadata().withAnnotations(Map.of(DiluNames.PARKED, "2026-11-28T10:00:00Z")).endMetadata()
                .editSpec().addNewReadinessGate(DiluNames.SERVING_CONDITION).addNewContainer().withName("c").withNewResources()
                .withLimits(Map.of(DiluNames.GPU_SM, new Quantity("30"))).endResources().endContainer().endSpec().build();
        PodShare share = PodShares.of(parked).orElseThrow();
        assertThat(share.parked()).isTrue();
        assertThat(share.parkedAt()).isEqualTo(java.time.Instant.parse("2026-11-28T10:00:00Z"));
        assertThat(share.wakeAsked()).isFalse();
        assertThat(share.servingGate()).isTrue();

        PodShare woken = PodShares.of(pod().editMetadata().withAnnotations(Map.of(DiluNames.WAKE, "2026-11-28T10:01:00Z"))
                .endMetadata().editSpec().withContainers(parked.getSpec().getContainers()).endSpec().build()).orElseThrow();
        assertThat(woken.parked()).isFalse();
        assertThat(woken.wakeAsked()).isTrue();
        assertThat(woken.servingGate()).isFalse();
        assertThat(woken.parkedAt()).as("no time to read").isEqualTo(java.time.Instant.EPOCH);
        PodShare refused = PodShares.of(pod().editMetadata().withAnnotations(Map.of(DiluNames.WAKE, "t",
                DiluNames.WAKE_FAILED, "no room")).endMetadata().editSpec().withContainers(parked.getSpec().getContainers())
                .endSpec().build()).orElseThrow();
        assertThat(refused.wakeFailed()).isTrue();
        assertThat(refused.wakeAsked()).as("answered").isFalse();
    }

    @Test
    void parkingPatchesNameTheUidAndRemoveWhatTheyReplace() {
        assertThat(ParkingPatch.park("u1", java.time.Instant.parse("2026-11-28T10:00:00Z"))).isEqualTo("{\"metadata\":{\"uid\":"
                + "\"u1\",\"annotations\":{\"dilu.io/parked\":\"2026-11-28T10:00:00Z\",\"dilu.io/wake\":null,"
                + "\"dilu.io/wake-failed\":null}}}");
        assertThat(ParkingPatch.wakeFailed("u1", "no \"room\"")).contains("\"dilu.io/wake-failed\":\"no \\\"room\\\"\"")
                .contains("\"dilu.io/wake\":null");
        assertThat(ParkingPatch.servingCondition("u1", List.of(), false, "Parked", "m", java.time.Instant.EPOCH))
                .as("the UID tested first").isEqualTo("[{\"op\":\"test\",\"path\":\"/metadata/uid\",\"value\":\"u1\"},{"
                + "\"op\":\"add\",\"path\":\"/status/conditions\",\"value\":[{\"type\":\"dilu.io/serving\","
                + "\"status\":\"False\",\"reason\":\"Parked\",\"message\":\"m\",\"lastTransitionTime\":"
                + "\"1970-01-01T00:00:00Z\"}]}]");
        var ready = new io.fabric8.kubernetes.api.model.PodConditionBuilder().withType("Ready").withStatus("True").build();
        var serving = new io.fabric8.kubernetes.api.model.PodConditionBuilder().withType(DiluNames.SERVING_CONDITION)
                .withStatus("True").build();
        assertThat(ParkingPatch.servingCondition("u1", List.of(ready, serving), false, "Parked", "m", java.time.Instant.EPOCH))
                .as("replaced where it is, tested first").contains("{\"op\":\"test\",\"path\":\"/status/conditions/1/type\","
                        + "\"value\":\"dilu.io/serving\"},{\"op\":\"replace\",\"path\":\"/status/conditions/1\"");
        assertThat(ParkingPatch.servingCondition("u1", List.of(ready), true, "Booked", "m", java.time.Instant.EPOCH))
                .contains("},{\"op\":\"add\",\"path\":\"/status/conditions/-\"");
    }

    @Test
    void podsWithoutDiluResourcesAreNotOurs() {
        assertThat(PodShares.of(pod().editSpec().addNewContainer().withName("c").endContainer().endSpec().build())).isEmpty();
    }

    @Test
    void theFunctionAnnotationWinsAndMalformedQuantitiesReadAsInvalid() {
        Pod pod = pod().editMetadata().withAnnotations(Map.of(DiluNames.FUNCTION, "bert")).withLabels(Map.of("app", "x"))
                .endMetadata().editSpec().addNewContainer().withName("c").withNewResources()
                .withLimits(Map.of(DiluNames.GPU_SM, new Quantity("1500m"))).endResources().endContainer().endSpec().build();
        PodShare share = PodShares.of(pod).orElseThrow();
        assertThat(share.function()).isEqualTo("ns/bert");
        assertThat(share.containers().getFirst().smPercent()).isEqualTo(-1);
    }

    @Test
    void quantitiesOutOfRangeAreRefusedNeverWrapped() {
        for (String bad : new String[] {"4294967346", "101", "0", "-5", "1e999999999", "30.5", "1Ei", "99999999999999999999999"}) {
            Pod pod = pod().editSpec().addNewContainer().withName("c").withNewResources()
                    .withLimits(Map.of(DiluNames.GPU_SM, new Quantity(bad))).endResources().endContainer().endSpec().build();
            assertThat(PodShares.of(pod).orElseThrow().containers().getFirst().smPercent()).as(bad).isEqualTo(-1);
        }
        assertThat(PodShares.integer(new Quantity("2Ki"))).isEqualTo(2048);
        assertThat(PodShares.integer(new Quantity("1e999999999"))).isEqualTo(-1);
        assertThat(PodShares.integer(new Quantity(String.valueOf(PodShares.MAX_QUANTITY + 1)))).isEqualTo(-1);
    }
}
