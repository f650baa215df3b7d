package io.dilu.simulator;

import io.dilu.core.placement.GpuDevice;
import io.dilu.core.placement.InstanceRequest;
import io.dilu.core.placement.NodeInventory;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.Reader;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.IntStream;

/**
 * The Alibaba GPU cluster trace v2023 ("openb", see resources/openb/LICENSE-NOTE.md) as placement input, in the
 * format of Weng et al.'s simulator (github.com/hkust-adsl/kubernetes-scheduler-simulator, {@code data/README.md}):
 * a node list {@code sn,cpu_milli,memory_mib,gpu,model} and a pod list
 * {@code name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec[,qos,pod_phase,creation_time,deletion_time,scheduled_time]}.
 *
 * <p>Each node offers its CPU (milli-cores) and memory (MiB) to pods, as the authors' nodes do
 * ({@code data/node_yaml}: {@code cpu: 64000m}, {@code memory: 262144Mi}); a node list without those columns
 * models GPUs only. Each pod asks for its {@code cpu_milli} and {@code memory_mib}, and a pod with
 * {@code num_gpu = 0} asks for nothing else (a CPU-only pod, which the authors place like any other). The trace
 * gives a GPU pod's GPU count and its share of each GPU ({@code gpu_milli}, 1000 = whole), nothing else, so: SM
 * request = SM limit = {@code gpu_milli} (it has no limits); GPU memory in proportion to the share, of the smallest
 * GPU in the cluster (16 GiB) so that a pod fits every model, as nothing says which model it ran on. GPU memory per
 * model — public figures where the model is public: P100 16 GiB, V100M16 16 GiB, V100M32 32 GiB, T4 16 GiB, A10
 * 24 GiB; G2 and G3 are unnamed Alibaba models, taken as 24 GiB and 32 GiB (an assumption; with memory in
 * proportion to the smallest GPU it never decides a placement). Each pod is its own function (the trace has no
 * function identity). A pod's {@code gpu_spec} ({@code |}-separated models, as in the gpuspec lists) restricts it
 * to those models. A list without {@code creation_time} (the multigpu lists) is taken in file order. An empty
 * field or {@code nan} (what pandas writes for one) in {@code gpu_spec} or {@code model} means none.
 *
 * <p>Every bad row is refused with its line: a missing or non-integer field, a value out of range, a GPU pod
 * without a share or a share without GPUs, a share of a GPU on a pod of several GPUs (the format gives those whole
 * GPUs: the authors' simulator stops on one), a deletion before the creation, a row with too few columns, a name
 * listed twice, a GPU node without a model.
 */
public final class OpenbTrace {

    static final Map<String, Long> MEMORY_MIB = Map.of("P100", 16_384L, "V100M16", 16_384L, "V100M32", 32_768L,
            "T4", 16_384L, "A10", 24_576L, "G2", 24_576L, "G3", 32_768L);
    static final long UNKNOWN_MODEL_MIB = 16_384;
    /** SMs are not in the trace and placement does not look at them. */
    static final int SMS = 80;
    /** Most CPU (milli-cores) or memory (MiB) a row may give: 2^40, far beyond any machine, short of "not modelled". */
    static final long MAX_AMOUNT = 1L << 40;

    /**
     * One pod of the list.
     *
     * @param gpus 0 for a CPU-only pod
     * @param gpuMilli share of each GPU, 0 for a CPU-only pod
     * @param cpuMilli CPU asked, milli-cores (0 when the list has no {@code cpu_milli})
     * @param memoryMib memory asked (0 when the list has no {@code memory_mib})
     */
    public record Pod(String name, int gpus, int gpuMilli, long creation, long deletion, Set<String> gpuSpec,
            long cpuMilli, long memoryMib) {

        public boolean cpuOnly() {
            return gpus == 0;
        }
    }

    private OpenbTrace() {}

    /** A malformed list, with the line at fault. */
    public static final class InvalidTraceException extends IOException {
        InvalidTraceException(String source, int line, String message) {
            super(source + ":" + line + ": " + message);
        }
    }

    /**
     * The node list: GPUs of the given model and, when the list has {@code cpu_milli} and {@code memory_mib}, the
     * node's CPU and memory; otherwise CPU and memory are not modelled ({@link NodeInventory#UNLIMITED}).
     */
    public static List<NodeInventory> readNodes(Reader in, String source) throws IOException {
        List<NodeInventory> nodes = new ArrayList<>();
        Rows rows = new Rows(in, source, "sn", "gpu", "model");
        boolean host = rows.has("cpu_milli") && rows.has("memory_mib");
        Set<String> names = new HashSet<>();
        for (String[] r = rows.next(); r != null; r = rows.next()) {
            String name = rows.text(r, "sn");
            if (!names.add(name)) {
                throw rows.invalid("node " + name + " is listed twice");
            }
            int gpus = rows.integer(r, "gpu", 0, 64);
            String model = rows.optional(r, "model");
            if (gpus > 0 && model.isEmpty()) {
                throw rows.invalid("column model is empty on a node of " + gpus + " GPUs");
            }
            long memory = MEMORY_MIB.getOrDefault(model, UNKNOWN_MODEL_MIB);
            NodeInventory node = new NodeInventory(name, IntStream.range(0, gpus)
                    .mapToObj(i -> new GpuDevice(name + "-" + i, i, model, memory, SMS)).toList());
            nodes.add(host ? node.withHost(rows.integer(r, "cpu_milli", 0, MAX_AMOUNT),
                    rows.integer(r, "memory_mib", 0, MAX_AMOUNT)) : node);
        }
        return nodes;
    }

    /**
     * Every pod of the list, CPU-only ones included, in creation order (ties by name), or in file order when the
     * list has no {@code creation_time} (creation is then the row's position and deletion never).
     */
    public static List<Pod> readPods(Reader in, String source) throws IOException {
        List<Pod> pods = new ArrayList<>();
        Rows rows = new Rows(in, source, "name", "num_gpu", "gpu_milli");
        boolean timed = rows.has("creation_time");
        Set<String> names = new HashSet<>();
        for (String[] r = rows.next(); r != null; r = rows.next()) {
            String name = rows.text(r, "name");
            if (!names.add(name)) {
                throw rows.invalid("pod " + name + " is listed twice");
            }
            int gpus = rows.integer(r, "num_gpu", 0, 64);
            int milli = rows.integer(r, "gpu_milli", 0, 1000);
            if (gpus > 0 && milli == 0) {
                throw rows.invalid("num_gpu=" + gpus + " with gpu_milli=0: a pod with GPUs asks a share of each, 1..1000");
            }
            if (gpus == 0 && milli > 0) {
                throw rows.invalid("gpu_milli=" + milli + " with num_gpu=0: a share of no GPU");
            }
            if (gpus > 1 && milli < 1000) {
                throw rows.invalid("num_gpu=" + gpus + " with gpu_milli=" + milli
                        + ": a pod of several GPUs takes whole GPUs (gpu_milli=1000) in this format");
            }
            long cpu = rows.has("cpu_milli") ? rows.integer(r, "cpu_milli", 0, MAX_AMOUNT) : 0;
            long memory = rows.has("memory_mib") ? rows.integer(r, "memory_mib", 0, MAX_AMOUNT) : 0;
            long created = timed ? rows.integer(r, "creation_time", 0, Long.MAX_VALUE) : pods.size();
            long deleted = timed && rows.has("deletion_time") && !rows.optional(r, "deletion_time").isEmpty()
                    ? rows.integer(r, "deletion_time", created, Long.MAX_VALUE) : Long.MAX_VALUE;
            Set<String> spec = gpus > 0 ? rows.models(r, "gpu_spec") : Set.of();
            pods.add(new Pod(name, gpus, milli, created, deleted, spec, cpu, memory));
        }
        if (timed) {
            pods.sort(Comparator.comparingLong(Pod::creation).thenComparing(Pod::name));
        }
        return pods;
    }

    /** A GPU pod as a placement request, asking no CPU or memory: memory in proportion to its share of the smallest GPU. */
    public static InstanceRequest request(Pod pod, long smallestGpuMib) {
        return request(pod, smallestGpuMib, false);
    }

    /**
     * A pod as a placement request: a GPU pod with its GPU memory in proportion to its share of the smallest GPU;
     * with {@code host}, its CPU and memory too (a CPU-only pod asks only those).
     */
    public static InstanceRequest request(Pod pod, long smallestGpuMib, boolean host) {
        if (pod.cpuOnly()) {
            if (!host) {
                throw new IllegalArgumentException("pod " + pod.name() + " asks for no GPU: it has nothing to place "
                        + "where CPU and memory are not modelled");
            }
            return InstanceRequest.cpuOnly(pod.name(), pod.name(), pod.cpuMilli(), pod.memoryMib());
        }
        long memory = Math.max(1, Math.ceilDiv(pod.gpuMilli() * smallestGpuMib, 1000));
        return new InstanceRequest(pod.name(), pod.name(), pod.gpus(), pod.gpuMilli(), pod.gpuMilli(), memory, false,
                pod.gpuSpec(), host ? pod.cpuMilli() : 0, host ? pod.memoryMib() : 0);
    }

    /** CSV rows with named columns (the format has no quoting). */
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
            String[] names = header.strip().split(",", -1);
            for (int i = 0; i < names.length; i++) {
                if (columns.put(names[i].strip(), i) != null) {
                    throw new InvalidTraceException(source, 1, "column " + names[i].strip() + " appears twice in the header");
                }
            }
            for (String c : required) {
                if (!columns.containsKey(c)) {
                    throw new InvalidTraceException(source, 1, "no column " + c + " in the header");
                }
            }
        }

        InvalidTraceException invalid(String message) {
            return new InvalidTraceException(source, line, message);
        }

        boolean has(String column) {
            return columns.containsKey(column);
        }

        /** A {@code |}-separated list of GPU model names; empty when the column is absent, blank or {@code nan}. */
        Set<String> models(String[] row, String column) throws InvalidTraceException {
            String value = optional(row, column);
            if (value.isEmpty()) {
                return Set.of();
            }
            Set<String> models = new TreeSet<>();
            for (String m : value.split("\\|", -1)) {
                if (!m.strip().matches("[A-Za-z0-9_.-]{1,64}")) {
                    throw invalid("column " + column + "=" + value
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
            if (row == null) {
                return null;
            }
            String[] fields = row.strip().split(",", -1);
            if (fields.length < columns.size()) {
                throw invalid("the row has " + fields.length + " columns, the header " + columns.size());
            }
            return fields;
        }

        /** A field's text, or "" when the column is absent, the field blank or {@code nan}. */
        String optional(String[] row, String column) {
            Integer i = columns.get(column);
            if (i == null) {
                return "";
            }
            String v = row[i].strip();
            return v.equalsIgnoreCase("nan") ? "" : v;
        }

        String text(String[] row, String column) throws InvalidTraceException {
            String v = row[columns.get(column)].strip();
            if (v.isEmpty()) {
                throw invalid("column " + column + " is empty");
            }
            return v;
        }

        long integer(String[] row, String column, long min, long max) throws InvalidTraceException {
            String v = text(row, column);
            try {
                long n = Long.parseLong(v);
                if (n < min || n > max) {
                    throw invalid("column " + column + "=" + v + " is not in " + min + ".." + max);
                }
                return n;
            } catch (NumberFormatException e) {
                throw invalid("column " + column + "=" + v + " is not an integer");
            }
        }

        int integer(String[] row, String column, int min, int max) throws InvalidTraceException {
            return (int) integer(row, column, (long) min, (long) max);
        }
    }
}
