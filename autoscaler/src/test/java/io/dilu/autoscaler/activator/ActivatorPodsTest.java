package io.dilu.autoscaler.activator;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.core.contract.KnativeNames;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.PodIP;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class ActivatorPodsTest {

    static Pod pod(String name, String phase, String ip) {
        return new PodBuilder().withNewMetadata().withName(name).withNamespace(KnativeNames.SERVING_NAMESPACE)
                .withLabels(Map.of("app", "activator")).endMetadata().withNewSpec().endSpec()
                .withNewStatus().withPhase(phase).withPodIP(ip).endStatus().build();
    }

    @Test
    void aRunningActivatorIsKnownByItsAddresses() {
        Pod dual = pod("activator-2", "Running", "10.244.1.8");
        dual.getStatus().setPodIPs(List.of(new PodIP("10.244.1.8"), new PodIP("fd00:10:244:1::8")));
        assertThat(ActivatorPods.index(List.of(pod("activator-1", "Running", "10.244.1.7"), dual))).isEqualTo(Map.of(
                "10.244.1.7", "activator-1", "10.244.1.8", "activator-2", "fd00:10:244:1:0:0:0:8", "activator-2"));
    }

    @Test
    void aPodThatIsNotRunningBeingDeletedOnTheHostsNetworkOrSharingItsAddressIsNobody() {
        Pod deleting = pod("activator-3", "Running", "10.244.1.9");
        deleting.getMetadata().setDeletionTimestamp("2026-08-01T12:00:00Z");
        Pod host = pod("activator-4", "Running", "192.168.0.5");
        host.getSpec().setHostNetwork(true);
        assertThat(ActivatorPods.index(List.of(pod("activator-1", "Pending", "10.244.1.7"),
                pod("activator-2", "Succeeded", "10.244.1.8"), deleting, host, pod("activator-5", "Running", null),
                pod("activator-6", "Running", "10.244.1.10"), pod("activator-7", "Running", "10.244.1.10")))).isEmpty();
    }

    @Test
    void addressesAreComparedInOneSpellingAndNamesAreNeverResolved() {
        assertThat(ActivatorPods.canonical("10.244.1.7")).contains("10.244.1.7");
        assertThat(ActivatorPods.canonical("::ffff:10.244.1.7")).as("IPv4-mapped").contains("10.244.1.7");
        assertThat(ActivatorPods.canonical("fd00:10:244:1::8")).contains("fd00:10:244:1:0:0:0:8");
        for (String notALiteral : new String[] {"localhost", "cafe.be", "activator.knative-serving", "", "1.2.3", "::g"}) {
            assertThat(ActivatorPods.canonical(notALiteral)).as(notALiteral).isEqualTo(Optional.empty());
        }
        assertThat(ActivatorPods.canonical(null)).isEmpty();
    }

    @Test
    void theLabelIsKeyEqualsValue() {
        assertThat(ActivatorPods.label("app=activator")).containsExactly("app", "activator");
        assertThat(ActivatorPods.label("role = activator")).containsExactly("role", "activator");
    }
}
