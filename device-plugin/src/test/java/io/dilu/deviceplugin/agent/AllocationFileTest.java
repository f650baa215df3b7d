package io.dilu.deviceplugin.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dilu.core.quota.Priority;
import io.dilu.core.quota.Quota;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class AllocationFileTest {

    static final Instant CREATED = Instant.parse("2026-11-28T10:00:00Z");

    static Allocation split() {
        var ids = new java.util.HashSet<>(ReconcilerTest.ids("GPU-a", 0, 12));
        ids.addAll(ReconcilerTest.ids("GPU-b", 0, 8));
        return new Allocation("id-1", "GPU-a", ids, CREATED, Optional.of(new ContainerRef("ns", "llm", "c0")),
                new Allocation.ShareQuota(40, Priority.SLO, 1.3, 24_576, Map.of("GPU-a", 15_360L, "GPU-b", 9_216L)),
                Optional.of(CREATED.plusSeconds(5)));
    }

    @Test
    void whatIsWrittenIsReadBack(@TempDir Path dir) throws IOException {
        Allocation a = split();
        AllocationFile.write(dir, a);
        assertThat(AllocationFile.read(dir, "id-1", "GPU-a")).isEqualTo(a);
        try (var files = Files.list(dir)) {
            assertThat(files).extracting(p -> p.getFileName().toString()).as("no temporary file left")
                    .containsExactly(AllocationFile.NAME);
        }
    }

    @Test
    void aShareNotMatchedYetKeepsTheNodesDefaults() {
        Allocation a = new Allocation("id-2", "GPU-a", ReconcilerTest.ids("GPU-a", 0, 10), CREATED, Optional.empty(),
                Allocation.ShareQuota.defaults(10), Optional.empty());
        Properties p = AllocationFile.properties(a);
        assertThat(p).doesNotContainKeys("klcThreshold", "owner", "missingSince", "stageMemoryMib");
        assertThat(AllocationFile.allocation(p, "id-2", "GPU-a")).isEqualTo(a);
    }

    @Test
    void anEditedFileIsReadAsTheAnnotationWouldBe() {
        Properties p = AllocationFile.properties(split());
        p.setProperty("klcThreshold", "fast");
        assertThat(AllocationFile.allocation(p, "id-1", "GPU-a").klcThreshold()).as("the node's default").isNaN();
        p.setProperty("klcThreshold", "0.5");
        assertThat(AllocationFile.allocation(p, "id-1", "GPU-a").klcThreshold()).isNaN();
        p.remove("memoryMib");
        assertThat(AllocationFile.allocation(p, "id-1", "GPU-a").memoryMib()).isEqualTo(Quota.DEFAULT_MEMORY_MIB);
    }

    @Test
    void aFileOfAnotherShareIsRefused() {
        Properties p = AllocationFile.properties(split());
        assertThatThrownBy(() -> AllocationFile.allocation(p, "id-1", "GPU-c")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("do not lie on GPU-c");
        p.remove("priority");
        assertThatThrownBy(() -> AllocationFile.allocation(p, "id-1", "GPU-a")).hasMessage("allocation.properties has no priority");
    }

    @Test
    void theDirectorysNameSaysTheGpuAndTheId() {
        String name = AllocationFile.directory("GPU-a", 20, "id-1");
        assertThat(name).isEqualTo("GPU-a_20_id-1");
        assertThat(AllocationFile.named(name)).contains(new AllocationFile.Named("GPU-a", "id-1"));
        assertThat(AllocationFile.named("lost+found")).isEmpty();
        assertThat(AllocationFile.named("GPU-a_20_id_1")).isEmpty();
    }
}
