package io.dilu.deviceplugin.gpu;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dilu.core.placement.GpuDevice;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class InventoryTest {

    @Test
    void parsesAnEmulatedInventory() {
        EmulatedInventory inv = EmulatedInventory.parse("node-a", "4x A100-40GB, 108 SMs");
        assertThat(inv.gpus()).hasSize(4);
        assertThat(inv.gpus().get(3)).isEqualTo(new GpuDevice("GPU-emu-node-a-3", 3, "A100-40GB", 40_960, 108));
        assertThat(inv.healthy("GPU-emu-node-a-0")).isTrue();
        assertThat(inv.healthy("GPU-other")).isFalse();
        assertThat(EmulatedInventory.parse("n", "2x H100-80GB").gpus())
                .as("an H100 SXM has 132 SMs").allMatch(g -> g.smCount() == 132 && g.memoryMib() == 81_920);
        assertThat(EmulatedInventory.parse("n", "1x H100-PCIE-80GB").gpus().getFirst().smCount()).isEqualTo(114);
    }

    @Test
    void refusesABadSpecNamingTheFieldAndTheForm() {
        assertThatThrownBy(() -> EmulatedInventory.parse("n", "four A100s"))
                .hasMessageContaining("dilu.agent.emulated-gpus='four A100s' is not allowed")
                .hasMessageContaining("4x A100-40GB, 108 SMs");
        assertThatThrownBy(() -> EmulatedInventory.parse("n", "0x A100-40GB")).hasMessageContaining("count=0").hasMessageContaining("1..64");
        assertThatThrownBy(() -> EmulatedInventory.parse("n", "1x A100-40GB, 0 SMs")).hasMessageContaining("SMs=0");
        assertThatThrownBy(() -> EmulatedInventory.parse("n", "1x Mystery-16GB"))
                .as("no silent default SM count").hasMessageContaining("the SM count of Mystery-16GB is not known");
    }

    @Test
    void withoutNvmlThereIsNoRealInventory() {
        boolean nvmlInstalled = Files.exists(Path.of("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"));
        assertThat(NvmlInventory.load().isPresent()).isEqualTo(nvmlInstalled);
    }
}
