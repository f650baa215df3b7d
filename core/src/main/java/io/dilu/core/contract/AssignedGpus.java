package io.dilu.core.contract;

import io.dilu.core.quota.FieldError;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * The value of {@code dilu.io/assigned-gpus}: the GPU UUIDs of a pod, comma-separated, in the order of the
 * pod's containers that request {@code dilu.io/gpu-sm}. One UUID means every such container shares that GPU;
 * otherwise the i-th container's share lies on the i-th GPU (pipeline stages of a model split over GPUs).
 *
 * @param uuids at least one, no duplicates
 */
public record AssignedGpus(List<String> uuids) {

    private static final Pattern UUID = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,127}");
    static final String ALLOWED = "a comma-separated list of distinct GPU UUIDs (letters, digits, '.', '_', '-')";

    public AssignedGpus {
        uuids = List.copyOf(uuids);
        if (uuids.isEmpty()) {
            throw new IllegalArgumentException("at least one GPU");
        }
    }

    public static AssignedGpus of(String... uuids) {
        return new AssignedGpus(List.of(uuids));
    }

    /** Why {@code value} is not a valid annotation, or empty when it is. */
    public static Optional<FieldError> validate(String value) {
        if (value == null || value.isBlank()) {
            return Optional.of(new FieldError(DiluNames.ASSIGNED_GPUS, String.valueOf(value), ALLOWED));
        }
        var seen = new HashSet<String>();
        for (String part : value.split(",", -1)) {
            String uuid = part.strip();
            if (!UUID.matcher(uuid).matches() || !seen.add(uuid)) {
                return Optional.of(new FieldError(DiluNames.ASSIGNED_GPUS, value, ALLOWED));
            }
        }
        return Optional.empty();
    }

    /** Parses the annotation; an invalid value is refused with the message of {@link #validate}. */
    public static AssignedGpus parse(String value) {
        validate(value).ifPresent(e -> {
            throw new IllegalArgumentException(e.message());
        });
        List<String> uuids = new ArrayList<>();
        for (String part : value.split(",")) {
            uuids.add(part.strip());
        }
        return new AssignedGpus(uuids);
    }

    /** The annotation read from a pod's annotations, when present and well-formed. */
    public static Optional<AssignedGpus> from(java.util.Map<String, String> annotations) {
        String value = annotations.get(DiluNames.ASSIGNED_GPUS);
        return value == null || validate(value).isPresent() ? Optional.empty() : Optional.of(parse(value));
    }

    /** The GPU of the {@code index}-th container that requests {@code dilu.io/gpu-sm}, if the list says. */
    public Optional<String> forContainer(int index) {
        if (uuids.size() == 1) {
            return Optional.of(uuids.getFirst());
        }
        return index >= 0 && index < uuids.size() ? Optional.of(uuids.get(index)) : Optional.empty();
    }

    /** The annotation value. */
    public String format() {
        return String.join(",", uuids);
    }

    /**
     * The annotation for containers whose shares lie on {@code perContainer} (in container order):
     * a single UUID when they all share one GPU, the list otherwise.
     */
    public static AssignedGpus ofContainers(List<String> perContainer) {
        if (perContainer.stream().distinct().count() == 1) {
            return new AssignedGpus(List.of(perContainer.getFirst()));
        }
        return new AssignedGpus(perContainer);
    }
}
