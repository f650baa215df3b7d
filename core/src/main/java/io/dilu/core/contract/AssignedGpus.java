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
 * otherwise the i-th container's share lies on the i-th GPU (the workers of a multi-GPU instance).
 *
 * <p>A pod whose one container is split into pipeline stages ({@code dilu.io/split: pipeline}) has a share on
 * each of several GPUs of its node: every entry is then {@code uuid:percent:mib}, the container's SM request
 * percent and GPU memory on that GPU, and the percents add up to its {@code dilu.io/gpu-sm}.
 *
 * @param uuids at least one, no duplicates
 * @param stages for a split container, its share on each GPU of {@code uuids}, in that order; else empty
 */
public record AssignedGpus(List<String> uuids, List<Stage> stages) {

    /** A pipeline stage's share of one GPU: SM request percent 1..100, memory in MiB, at least 1. */
    public record Stage(String uuid, int smPercent, long memoryMib) {}

    private static final Pattern UUID = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,127}");
    private static final Pattern STAGE = Pattern.compile("(" + UUID.pattern() + "):([0-9]{1,3}):([0-9]{1,9})");
    static final String ALLOWED = "a comma-separated list of distinct GPU UUIDs (letters, digits, '.', '_', '-'),"
            + " or for a split container of at least two uuid:percent:mib entries (percent 1..100, mib 1..999999999)";

    public AssignedGpus {
        uuids = List.copyOf(uuids);
        stages = List.copyOf(stages);
        if (uuids.isEmpty()) {
            throw new IllegalArgumentException("at least one GPU");
        }
        if (!stages.isEmpty() && !stages.stream().map(Stage::uuid).toList().equals(uuids)) {
            throw new IllegalArgumentException("stages must lie on the listed GPUs, in their order");
        }
    }

    public AssignedGpus(List<String> uuids) {
        this(uuids, List.of());
    }

    public static AssignedGpus of(String... uuids) {
        return new AssignedGpus(List.of(uuids));
    }

    /** A container split into pipeline stages, at least two. */
    public static AssignedGpus split(List<Stage> stages) {
        if (stages.size() < 2) {
            throw new IllegalArgumentException("a split needs at least two stages, got " + stages.size());
        }
        return new AssignedGpus(stages.stream().map(Stage::uuid).toList(), stages);
    }

    /** Whether this is one container split over several GPUs. */
    public boolean isSplit() {
        return !stages.isEmpty();
    }

    /** Σ SM percent over the stages: what the split container asks of {@code dilu.io/gpu-sm}. */
    public int splitPercent() {
        return stages.stream().mapToInt(Stage::smPercent).sum();
    }

    /** Why {@code value} is not a valid annotation, or empty when it is. */
    public static Optional<FieldError> validate(String value) {
        try {
            parseOrThrow(value);
            return Optional.empty();
        } catch (IllegalArgumentException e) {
            return Optional.of(new FieldError(DiluNames.ASSIGNED_GPUS, String.valueOf(value), ALLOWED));
        }
    }

    /** Parses the annotation; an invalid value is refused with the message of {@link #validate}. */
    public static AssignedGpus parse(String value) {
        validate(value).ifPresent(e -> {
            throw new IllegalArgumentException(e.message());
        });
        return parseOrThrow(value);
    }

    private static AssignedGpus parseOrThrow(String value) {
        if (value == null || value.isBlank() || value.length() > 8192) {
            throw new IllegalArgumentException("blank or too long");
        }
        List<String> uuids = new ArrayList<>();
        List<Stage> stages = new ArrayList<>();
        var seen = new HashSet<String>();
        for (String part : value.split(",", -1)) {
            String entry = part.strip();
            var stage = STAGE.matcher(entry);
            if (stage.matches()) {
                int percent = Integer.parseInt(stage.group(2));
                long mib = Long.parseLong(stage.group(3));
                if (percent < 1 || percent > 100 || mib < 1) {
                    throw new IllegalArgumentException("stage out of range");
                }
                stages.add(new Stage(stage.group(1), percent, mib));
                entry = stage.group(1);
            } else if (!UUID.matcher(entry).matches()) {
                throw new IllegalArgumentException("not a UUID");
            }
            if (!seen.add(entry)) {
                throw new IllegalArgumentException("repeated");
            }
            uuids.add(entry);
        }
        if (!stages.isEmpty() && (stages.size() != uuids.size() || stages.size() < 2)) {
            throw new IllegalArgumentException("stages mixed with plain UUIDs, or a single stage");
        }
        return new AssignedGpus(uuids, stages);
    }

    /** The annotation read from a pod's annotations, when present and well-formed. */
    public static Optional<AssignedGpus> from(java.util.Map<String, String> annotations) {
        String value = annotations.get(DiluNames.ASSIGNED_GPUS);
        return value == null || validate(value).isPresent() ? Optional.empty() : Optional.of(parse(value));
    }

    /**
     * The GPU of the {@code index}-th container that requests {@code dilu.io/gpu-sm}, if the list says; empty
     * for a split container, which has no one GPU.
     */
    public Optional<String> forContainer(int index) {
        if (isSplit()) {
            return Optional.empty();
        }
        if (uuids.size() == 1) {
            return Optional.of(uuids.getFirst());
        }
        return index >= 0 && index < uuids.size() ? Optional.of(uuids.get(index)) : Optional.empty();
    }

    /** The annotation value. */
    public String format() {
        if (isSplit()) {
            return String.join(",", stages.stream().map(s -> s.uuid() + ":" + s.smPercent() + ":" + s.memoryMib()).toList());
        }
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
