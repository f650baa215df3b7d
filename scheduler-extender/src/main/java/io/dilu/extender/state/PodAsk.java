package io.dilu.extender.state;

import io.dilu.core.contract.DiluNames;
import io.dilu.core.contract.PodQuotaAnnotations;
import io.dilu.core.placement.InstanceRequest;
import io.dilu.core.quota.FieldError;
import io.dilu.kube.PodShare;
import java.util.List;
import java.util.stream.Collectors;

/**
 * What a pod asks of the placement, as core's {@link InstanceRequest}, or why it cannot be placed anywhere.
 *
 * <p>Each container that requests {@code dilu.io/gpu-sm} gets a GPU of its own, all on one node: a pod with
 * two such containers is a two-GPU instance (training workers, pipeline stages of a large model), so they
 * must ask for the same share. Containers that should share one GPU belong in separate pods. A pod with
 * {@code dilu.io/split: pipeline} has one GPU container, which may be cut into pipeline stages over several
 * GPUs of a node when no single GPU has its memory free.
 */
public sealed interface PodAsk {

    /** A valid request. */
    record Share(InstanceRequest request) implements PodAsk {}

    /** Not placeable as written; the reason is for the user. */
    record Invalid(String reason) implements PodAsk {}

    static PodAsk of(PodShare pod, long defaultMemoryMib) {
        List<PodShare.Container> containers = pod.containers();
        for (PodShare.Container c : containers) {
            if (c.smPercent() < 1 || c.smPercent() > 100) {
                return new Invalid("container " + c.name() + ": dilu.io/gpu-sm must be a whole percent in 1..100"
                        + (c.smPercent() == -1 ? " (missing or not a whole number)" : ", got " + c.smPercent()));
            }
            if (c.memoryMib().isPresent() && c.memoryMib().get() < 1) {
                return new Invalid("container " + c.name() + ": dilu.io/gpu-memory must be a whole number of MiB, at least 1");
            }
        }
        PodShare.Container first = containers.getFirst();
        long memory = first.memoryMib().orElse(defaultMemoryMib);
        for (PodShare.Container c : containers) {
            if (c.smPercent() != first.smPercent() || c.memoryMib().orElse(defaultMemoryMib) != memory) {
                return new Invalid("containers " + first.name() + " and " + c.name() + " ask for different GPU shares ("
                        + first.smPercent() + "% / " + memory + " MiB and " + c.smPercent() + "% / "
                        + c.memoryMib().orElse(defaultMemoryMib) + " MiB); each GPU container of a pod gets a GPU of "
                        + "one node and they must ask for the same share");
            }
        }
        List<FieldError> errors = PodQuotaAnnotations.validate(pod.annotations(), first.smPercent());
        if (!errors.isEmpty()) {
            return new Invalid(errors.stream().map(FieldError::message).collect(Collectors.joining("; ")));
        }
        boolean split = DiluNames.SPLIT_PIPELINE.equals(pod.annotations().get(DiluNames.SPLIT));
        if (split && containers.size() != 1) {
            return new Invalid(DiluNames.SPLIT + ": " + DiluNames.SPLIT_PIPELINE + " splits one GPU container; this pod has "
                    + containers.size() + " containers requesting dilu.io/gpu-sm");
        }
        int limit = PodQuotaAnnotations.smLimit(pod.annotations(), first.smPercent());
        return new Share(new InstanceRequest(pod.uid(), pod.function(), containers.size(), first.smPercent() * 10,
                limit * 10, memory, split));
    }
}
