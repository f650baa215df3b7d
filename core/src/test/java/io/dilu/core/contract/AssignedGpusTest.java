package io.dilu.core.contract;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

class AssignedGpusTest {

    @Test
    void parsesAndFormatsTheListInContainerOrder() {
        AssignedGpus gpus = AssignedGpus.parse("GPU-a, GPU-b");
        assertThat(gpus.uuids()).containsExactly("GPU-a", "GPU-b");
        assertThat(gpus.format()).isEqualTo("GPU-a,GPU-b");
        assertThat(gpus.forContainer(1)).contains("GPU-b");
        assertThat(gpus.forContainer(2)).isEmpty();
    }

    @Test
    void oneGpuIsSharedByEveryContainer() {
        assertThat(AssignedGpus.parse("GPU-emu-n1-0").forContainer(3)).contains("GPU-emu-n1-0");
        assertThat(AssignedGpus.ofContainers(List.of("GPU-a", "GPU-a")).format()).isEqualTo("GPU-a");
        assertThat(AssignedGpus.ofContainers(List.of("GPU-a", "GPU-b")).format()).isEqualTo("GPU-a,GPU-b");
    }

    @Test
    void aSplitContainerNamesEachGpuWithItsStage() {
        AssignedGpus split = AssignedGpus.parse("GPU-a:30:12288, GPU-b:20:8192");
        assertThat(split.isSplit()).isTrue();
        assertThat(split.uuids()).containsExactly("GPU-a", "GPU-b");
        assertThat(split.stages()).containsExactly(new AssignedGpus.Stage("GPU-a", 30, 12288),
                new AssignedGpus.Stage("GPU-b", 20, 8192));
        assertThat(split.splitPercent()).isEqualTo(50);
        assertThat(split.format()).isEqualTo("GPU-a:30:12288,GPU-b:20:8192");
        assertThat(split.forContainer(0)).as("no one GPU holds a split container").isEmpty();
        assertThat(AssignedGpus.parse(split.format())).isEqualTo(split);
        assertThat(AssignedGpus.parse("GPU-a,GPU-b").isSplit()).isFalse();
    }

    @ParameterizedTest
    @ValueSource(strings = {"", " ", "GPU-a,", ",GPU-a", "GPU-a,GPU-a", "GPU a", "GPU-a;GPU-b", "-GPU",
        "GPU-a:30:100", "GPU-a:30:100,GPU-b", "GPU-a:0:100,GPU-b:20:100", "GPU-a:101:100,GPU-b:20:100",
        "GPU-a:30:0,GPU-b:20:100", "GPU-a:30:100,GPU-a:20:100", "GPU-a:30,GPU-b:20", "GPU-a:-3:100,GPU-b:20:100"})
    void refusesMalformedValuesNamingTheAnnotation(String value) {
        assertThat(AssignedGpus.validate(value)).hasValueSatisfying(e -> assertThat(e.field()).isEqualTo("dilu.io/assigned-gpus"));
        assertThatThrownBy(() -> AssignedGpus.parse(value)).hasMessageContaining("dilu.io/assigned-gpus")
                .hasMessageContaining("comma-separated");
    }
}
