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

    @ParameterizedTest
    @ValueSource(strings = {"", " ", "GPU-a,", ",GPU-a", "GPU-a,GPU-a", "GPU a", "GPU-a;GPU-b", "-GPU"})
    void refusesMalformedValuesNamingTheAnnotation(String value) {
        assertThat(AssignedGpus.validate(value)).hasValueSatisfying(e -> assertThat(e.field()).isEqualTo("dilu.io/assigned-gpus"));
        assertThatThrownBy(() -> AssignedGpus.parse(value)).hasMessageContaining("dilu.io/assigned-gpus")
                .hasMessageContaining("comma-separated");
    }
}
