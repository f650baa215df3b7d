package io.dilu.simulator;

import io.dilu.core.placement.GpuDevice;
import io.dilu.core.placement.InstanceRequest;
import io.dilu.core.placement.NodeInventory;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.Reader;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.IntStream;

/**
 * The Alibaba GPU cluster trace v2023 ("openb", see resources/openb/LICENSE-NOTE.md) as placement input.
 *
 * <p>The trace gives a pod's GPU count and its share of each GPU ({@code gpu_milli}, 1000 = whole), nothing
 * else, so: SM request = SM limit = {@code gpu_milli} (it has no limits); GPU memory in proportion to the
 * share, of the smallest GPU in the cluster (16 GiB) so that a pod fits every model, as nothing says which
 * model it ran on. GPU memory per model — public figures where the model is public: P100 16 GiB, V100M16
 * 16 GiB, V100M32 32 GiB, T4 16 GiB, A10 24 GiB; G2 and G3 are unnamed Alibaba models, taken as 24 GiB
 * and 32 GiB (an assumption; with memory in proportion to the smallest GPU it never decides a placement).
 * Pods without GPUs are skipped; each pod is its own function (the trace has no function identity). A pod's
 * {@code gpu_spec} ({@code |}-separated models, as in Weng et al.'s gpuspec lists) restricts it to those
 * models. A list without {@code creation_time} (the multigpu lists) is taken in file order.
 */
public final class OpenbTrace {

    static final Map<String, Long> MEMORY_MIB = Map.of("P100", 16_384L, "V100M16", 16_384L, "V100M32", 32_768L,
            "T4", 16_384L, "A10", 24_576L, "G2", 24_576L, "G3", 32_768L);
    static final long UNKNOWN_MODEL_MIB = 16_384;
    /** SMs are not in the trace and placement does not look at them. */
    static final int SMS = 80;

    /** One pod of the trace that asks for GPUs. */
    public record Pod(String name, int gpus, int gpuMilli, long creation, long deletion, Set<String> gpuSpec) {}

    private OpenbTrace() {}

    /** A malformed trace, with the line and the column at fault. */
    public static final class InvalidTraceException extends IOException {
        InvalidTraceException(String source, int line, String message) {
            super(source + ":" + line + ": " + message);
        }
    }

    public static List<NodeInventory> readNodes(Reader in, String source) throws IOException {
        List<NodeInventory> nodes = new ArrayList<>();
        Rows rows = new Rows(in, source, "sn", "gpu", "model");
        for (String[] r = rows.next(); r != null; r = rows.next()) {
            String name = rows.text(r, "sn");
            int gpus = rows.integer(r, "gpu", 0, 64);
            String model = rows.text(r, "model");
            long memory = MEMORY_MIB.getOrDefault(model, UNKNOWN_MODEL_MIB);
            nodes.add(new NodeInventory(name, IntStream.range(0, gpus)
                    .mapToObj(i -> new GpuDevice(name + "-" + i, i, model, memory, SMS)).toList()));
        }
        return nodes;
    }

    /**
     * The pods that ask for GPUs, in creation order (ties by name), or in file order when the list has no
     * {@code creation_time} (creation is then the row's position and deletion never).
     */
    public static List<Pod> readPods(Reader in, String source) throws IOException {
        List<Pod> pods = new ArrayList<>();
        Rows rows = new Rows(in, source, "name", "num_gpu", "gpu_milli");
        boolean timed = rows.has("creation_time");
        for (String[] r = rows.next(); r != null; r = rows.next()) {
            int gpus = rows.integer(r, "num_gpu", 0, 64);
            int milli = rows.integer(r, "gpu_milli", 0, 1000);
            if (gpus > 0 && milli > 0) {
                long created = timed ? rows.integer(r, "creation_time", 0, Long.MAX_VALUE) : pods.size();
                long deleted = timed && rows.has("deletion_time")
                        ? rows.integer(r, "deletion_time", created, Long.MAX_VALUE) : Long.MAX_VALUE;
                pods.add(new Pod(rows.text(r, "name"), gpus, milli, created, deleted, rows.models(r, "gpu_spec")));
            }
        }
        if (timed) {
            pods.sort(Comparator.comparingLong(Pod::creation).thenComparing(Pod::name));
        }
        return pods;
    }

    /** A pod as a placement request: memory in proportion to its share of the smallest GPU. */
    public static InstanceRequest request(Pod pod, long smallestGpuMib) {
        long memory = Math.max(1, Math.ceilDiv(pod.gpuMilli() * smallestGpuMib, 1000));
        return new InstanceRequest(pod.name(), pod.name(), pod.gpus(), pod.gpuMilli(), pod.gpuMilli(), memory, false,
                pod.gpuSpec());
    }

    /** CSV rows with named columns (the trace has no quoting). */
    private static final class Rows {
        private final BufferedReader in;
        private final String source;
        private final Map<String, Integer> columns = new java.util.HashMap<>();
        private int line = 1;

        Rows(Reader reader, String source, String... required) throws IOException {
            this.in = new BufferedReader(reader);
            this.source = source;
            String header = in.readLine();
            if (header == null) {
                throw new InvalidTraceException(source, 1, "empty file, expected a header");
            }
            String[] names = header.split(",", -1);
            for (int i = 0; i < names.length; i++) {
                columns.put(names[i].strip(), i);
            }
            for (String c : required) {
                if (!columns.containsKey(c)) {
                    throw new InvalidTraceException(source, 1, "no column " + c + " in the header");
                }
            }
        }

        boolean has(String column) {
            return columns.containsKey(column);
        }

        /** A {@code |}-separated list of GPU model names; empty when the column is absent or blank. */
        Set<String> models(String[] row, String column) throws InvalidTraceException {
            Integer i = columns.get(column);
            if (i == null || i >= row.length || row[i].isBlank()) {
                return Set.of();
            }
            Set<String> models = new java.util.TreeSet<>();
            for (String m : row[i].split("\\|", -1)) {
                if (!m.strip().matches("[A-Za-z0-9_.-]{1,64}")) {
                    throw new InvalidTraceException(source, line, "column " + column + "=" + row[i]
                            + " is not a |-separated list of GPU models (letters, digits, _ . -; at most 64 each)");
                }
                models.add(m.strip());
            }
            return models;
        }

        String[] next() throws IOException {
            String row;
            do {
                row = in.readLine();
                line++;
            } while (row != null && row.isBlank());
            return row == null ? null : row.split(",", -1);
        }

        String text(String[] row, String column) throws InvalidTraceException {
            int i = columns.get(column);
            if (i >= row.length || row[i].isBlank()) {
                throw new InvalidTraceException(source, line, "column " + column + " is empty");
            }
            return row[i].strip();
        }

        long integer(String[] row, String column, long min, long max) throws InvalidTraceException {
            String v = text(row, column);
            try {
                long n = Long.parseLong(v);
                if (n < min || n > max) {
                    throw new InvalidTraceException(source, line, "column " + column + "=" + v + " is not in " + min + ".." + max);
                }
                return n;
            } catch (NumberFormatException e) {
                throw new InvalidTraceException(source, line, "column " + column + "=" + v + " is not an integer");
            }
        }

        int integer(String[] row, String column, int min, int max) throws InvalidTraceException {
            return (int) integer(row, column, (long) min, (long) max);
        }
    }
}
