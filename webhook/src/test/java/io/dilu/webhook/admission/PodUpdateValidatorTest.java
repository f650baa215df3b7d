package io.dilu.webhook.admission;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.core.contract.DiluNames;
import io.dilu.core.quota.FieldError;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class PodUpdateValidatorTest {

    static final Map<String, String> CREATED = Map.of(DiluNames.PRIORITY, "best-effort", DiluNames.SM_LIMIT, "2",
            DiluNames.FUNCTION, "fn", "team", "a");

    static List<String> errors(Map<String, String> after, String user) {
        return PodUpdateValidator.validate(CREATED, after, user, Pods.POLICY.assignedGpusWriters(), Pods.POLICY.parkingWriters()).stream()
                .map(FieldError::message).toList();
    }

    static Map<String, String> with(String key, String value) {
        Map<String, String> a = new HashMap<>(CREATED);
        if (value == null) {
            a.remove(key);
        } else {
            a.put(key, value);
        }
        return a;
    }

    @Test
    void theQuotaAnnotationsAreFixedAtCreation() {
        assertThat(errors(with(DiluNames.PRIORITY, "slo"), "alice")).containsExactly("metadata.annotations[dilu.io/priority]=slo "
                + "(was best-effort) is not allowed: must be unchanged: dilu.io/priority is fixed when the pod is created "
                + "(create a new pod to change it)");
        assertThat(errors(with(DiluNames.SM_LIMIT, "100"), Pods.NODE_AGENT)).as("even for Dilu's own writers").singleElement()
                .asString().startsWith("metadata.annotations[dilu.io/sm-limit]=100 (was 2) is not allowed");
        assertThat(errors(with(DiluNames.FUNCTION, null), "alice")).singleElement().asString()
                .startsWith("metadata.annotations[dilu.io/function]=absent (was fn) is not allowed");
        for (String added : List.of(DiluNames.KLC_THRESHOLD, DiluNames.LLM, DiluNames.BATCH_SIZE, DiluNames.PROFILE)) {
            assertThat(errors(with(added, "1.1"), "alice")).singleElement().asString()
                    .startsWith("metadata.annotations[" + added + "]=1.1 (was absent) is not allowed");
        }
        assertThat(errors(with("team", "b"), "alice")).as("other annotations are the pod's").isEmpty();
    }

    @Test
    void theSeccompAnnotationsAreFixedAtCreation() {
        // The kubelet reads a container's annotation before the pod's field each time it starts the container.
        assertThat(errors(with("container.seccomp.security.alpha.kubernetes.io/server", "unconfined"), "alice")).containsExactly(
                "metadata.annotations[container.seccomp.security.alpha.kubernetes.io/server]=unconfined (was absent) is not "
                        + "allowed: must be unchanged: seccomp annotations are fixed when the pod is created (the kubelet reads "
                        + "them each time it starts a container)");
        Map<String, String> created = with("seccomp.security.alpha.kubernetes.io/pod", "runtime/default");
        Map<String, String> changed = new HashMap<>(created);
        changed.put("seccomp.security.alpha.kubernetes.io/pod", "unconfined");
        assertThat(PodUpdateValidator.validate(created, changed, "alice", Pods.POLICY.assignedGpusWriters(), Pods.POLICY.parkingWriters())).singleElement()
                .asString().startsWith("metadata.annotations[seccomp.security.alpha.kubernetes.io/pod]=unconfined (was runtime/default)");
        assertThat(PodUpdateValidator.validate(created, created, "alice", Pods.POLICY.assignedGpusWriters(), Pods.POLICY.parkingWriters())).isEmpty();
    }

    @Test
    void onlyTheExtenderAndTheNodeAgentMayChangeTheAssignedGpus() {
        Map<String, String> assigned = with(DiluNames.ASSIGNED_GPUS, "GPU-1");
        assertThat(errors(assigned, Pods.NODE_AGENT)).isEmpty();
        assertThat(errors(assigned, Pods.SCHEDULER)).isEmpty();
        assertThat(errors(assigned, "system:serviceaccount:fns:default")).containsExactly(
                "metadata.annotations[dilu.io/assigned-gpus]=GPU-1 (was absent) is not allowed: must be unchanged except by the "
                        + "scheduler extender and the node agent (system:serviceaccount:dilu-system:dilu-node-agent, "
                        + "system:serviceaccount:dilu-system:dilu-scheduler), not by system:serviceaccount:fns:default");
    }

    @Test
    void onlyTheAutoscalerAndTheExtenderMayParkAndWake() {
        Map<String, String> parked = with(DiluNames.PARKED, "2026-11-28T10:00:00Z");
        assertThat(errors(parked, Pods.AUTOSCALER)).isEmpty();
        assertThat(errors(with(DiluNames.WAKE_FAILED, "no room"), Pods.SCHEDULER)).isEmpty();
        assertThat(errors(with(DiluNames.WAKE, "2026-11-28T10:00:00Z"), "system:serviceaccount:fns:default")).containsExactly(
                "metadata.annotations[dilu.io/wake]=2026-11-28T10:00:00Z (was absent) is not allowed: must be unchanged except "
                        + "by the autoscaler and the scheduler extender (system:serviceaccount:dilu-system:dilu-autoscaler, "
                        + "system:serviceaccount:dilu-system:dilu-scheduler), not by system:serviceaccount:fns:default");
        assertThat(PodUpdateValidator.validate(parked, CREATED, "alice", Pods.POLICY.assignedGpusWriters(),
                Pods.POLICY.parkingWriters())).as("nor unpark its own pod").singleElement().asString()
                .startsWith("metadata.annotations[dilu.io/parked]=absent (was 2026-11-28T10:00:00Z) is not allowed");
        assertThat(errors(parked, Pods.NODE_AGENT)).as("the node agent only reads it").hasSize(1);
    }
}
