package io.dilu.deviceplugin.agent;

import io.dilu.core.contract.PodQuotaAnnotations;
import io.dilu.core.quota.Priority;
import io.dilu.core.quota.Quota;
import io.dilu.deviceplugin.kubelet.GpuSmDevicePlugin;
import java.io.IOException;
import java.io.Reader;
import java.io.Writer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Instant;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * An allocation on disk, so that an agent restart loses nothing: its control-block directory under the control root,
 * named {@code <gpu-uuid>_<smPercent>_<id>}, holds beside the control block an {@code allocation.properties} with the
 * device IDs, the owner and the quota. Small, human-readable, replaced atomically so a crash leaves the old or the
 * new. The file is not mounted into the container; only {@code grant} and {@code report} are.
 */
final class AllocationFile {

    static final String NAME = "allocation.properties";

    private AllocationFile() {}

    /** The directory's name. */
    static String directory(String gpu, int smPercent, String id) {
        return gpu + "_" + smPercent + "_" + id;
    }

    /** What a directory's name says: the (first) GPU's UUID and the allocation's id. */
    record Named(String gpu, String id) {}

    /** Empty for a name that is not {@code <gpu-uuid>_<smPercent>_<id>}. */
    static Optional<Named> named(String directory) {
        String[] parts = directory.split("_");
        return parts.length == 3 ? Optional.of(new Named(parts[0], parts[2])) : Optional.empty();
    }

    static void write(Path dir, Allocation a) throws IOException {
        Path tmp = dir.resolve(NAME + ".tmp");
        try (Writer w = Files.newBufferedWriter(tmp)) {
            properties(a).store(w, "Dilu node agent: one GPU share");
        }
        Files.move(tmp, dir.resolve(NAME), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }

    /** @throws IllegalArgumentException for a file that does not describe a share of {@code gpu} */
    static Allocation read(Path dir, String id, String gpu) throws IOException {
        Properties p = new Properties();
        try (Reader r = Files.newBufferedReader(dir.resolve(NAME))) {
            p.load(r);
        }
        return allocation(p, id, gpu);
    }

    static Properties properties(Allocation a) {
        Properties p = new Properties();
        p.setProperty("gpu", a.gpu());
        p.setProperty("devices", a.deviceIds().stream().sorted().collect(Collectors.joining(",")));
        p.setProperty("created", a.created().toString());
        p.setProperty("smLimit", Integer.toString(a.smLimit()));
        p.setProperty("priority", a.priority().label());
        if (!Double.isNaN(a.klcThreshold())) {
            p.setProperty("klcThreshold", Double.toString(a.klcThreshold()));
        }
        p.setProperty("memoryMib", Long.toString(a.memoryMib()));
        if (!a.quota().stageMemoryMib().isEmpty()) {
            p.setProperty("stageMemoryMib", a.quota().stageMemoryMib().entrySet().stream().sorted(Map.Entry.comparingByKey())
                    .map(e -> e.getKey() + "=" + e.getValue()).collect(Collectors.joining(",")));
        }
        a.owner().ifPresent(o -> p.setProperty("owner", o.namespace() + "/" + o.pod() + "/" + o.container()));
        a.missingSince().ifPresent(t -> p.setProperty("missingSince", t.toString()));
        return p;
    }

    /**
     * The allocation {@code p} describes. A threshold that is not one (the file was edited) is the node's default,
     * as the same value in a pod's annotation would be.
     *
     * @throws IllegalArgumentException for a file that does not describe a share of {@code gpu}
     */
    static Allocation allocation(Properties p, String id, String gpu) {
        String devices = required(p, "devices");
        Set<String> ids = Arrays.stream(devices.split(",")).map(String::strip).collect(Collectors.toSet());
        if (ids.stream().noneMatch(d -> GpuSmDevicePlugin.gpuOf(d).equals(gpu))) {
            throw new IllegalArgumentException("devices " + devices + " do not lie on " + gpu);
        }
        Optional<ContainerRef> owner = Optional.ofNullable(p.getProperty("owner")).map(o -> {
            String[] parts = o.split("/");
            if (parts.length != 3) {
                throw new IllegalArgumentException("owner " + o + " is not namespace/pod/container");
            }
            return new ContainerRef(parts[0], parts[1], parts[2]);
        });
        Priority priority = Priority.fromLabel(required(p, "priority"))
                .orElseThrow(() -> new IllegalArgumentException("priority " + p.getProperty("priority")));
        String threshold = p.getProperty("klcThreshold");
        long memory = Long.parseLong(p.getProperty("memoryMib", Long.toString(Quota.DEFAULT_MEMORY_MIB)));
        Map<String, Long> stages = new HashMap<>();
        for (String stage : p.getProperty("stageMemoryMib", "").split(",")) {
            if (!stage.isBlank()) {
                int at = stage.lastIndexOf('=');
                stages.put(stage.substring(0, at).strip(), Long.parseLong(stage.substring(at + 1).strip()));
            }
        }
        return new Allocation(id, gpu, ids, Instant.parse(required(p, "created")), owner,
                new Allocation.ShareQuota(Integer.parseInt(required(p, "smLimit")), priority,
                        threshold == null ? Double.NaN : PodQuotaAnnotations.klcThreshold(threshold), memory, stages),
                Optional.ofNullable(p.getProperty("missingSince")).map(Instant::parse));
    }

    private static String required(Properties p, String key) {
        String v = p.getProperty(key);
        if (v == null || v.isBlank()) {
            throw new IllegalArgumentException(NAME + " has no " + key);
        }
        return v;
    }
}
