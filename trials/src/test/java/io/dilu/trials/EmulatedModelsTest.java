package io.dilu.trials;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.offset;

import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

class EmulatedModelsTest {

    @Test
    void fourInferenceModelsAndOneTrainingJobWithUniqueNames() {
        assertThat(EmulatedModels.ALL.stream().filter(m -> !m.training())).hasSize(4);
        assertThat(EmulatedModels.ALL.stream().filter(EmulatedModel::training)).hasSize(1);
        assertThat(EmulatedModels.names()).doesNotHaveDuplicates();
        assertThat(EmulatedModels.named("bert-large")).contains(EmulatedModels.BERT_LARGE);
        assertThat(EmulatedModels.named("nope")).isEmpty();
    }

    @Test
    void trialCommandsRunTheWorkloadInTrialMode() {
        Path root = Path.of("/build");
        assertThat(EmulatedModels.RESNET50.trialCommand(root, 10)).containsExactly("/build/bin/emu-infer", "--kernels", "54",
                "--blocks", "5", "--blocks-per-item", "5", "--block-us", "20", "--memory-mib", "49", "--memory-per-item-mib", "2",
                "--trial-batches", "10");
        assertThat(EmulatedModels.RESNET50_TRAINING.trialCommand(root, 5)).startsWith("/build/bin/emu-train")
                .endsWith("--trial", "--iterations", "5");
        assertThatThrownBy(() -> EmulatedModels.RESNET50.trialCommand(root, 0)).isInstanceOf(IllegalArgumentException.class);
    }

    /** The shapes say what their documentation says: checked on the emulator's arithmetic. */
    @Test
    void shapesHaveTheStructureTheirSourcesGiveThem() {
        // MobileNet underfills the whole GPU even at batch 32: one wave, whatever the batch.
        var mobilenet = new TestingEmulatedGpu(EmulatedModels.MOBILENET);
        assertThat(mobilenet.computeSeconds(100, 32)).isEqualTo(mobilenet.computeSeconds(100, 1));
        // BERT-Large: one sequence already takes half the SMs: two fill the whole GPU, four need two waves.
        var bert = new TestingEmulatedGpu(EmulatedModels.BERT_LARGE);
        assertThat(bert.computeSeconds(100, 2)).isEqualTo(bert.computeSeconds(100, 1));
        assertThat(bert.computeSeconds(100, 4)).isEqualTo(2 * bert.computeSeconds(100, 1));
        // ResNet-50 at batch 1 is about a millisecond.
        assertThat(new TestingEmulatedGpu(EmulatedModels.RESNET50).computeSeconds(100, 1)).isEqualTo(0.00108, offset(1e-9));
        // Llama-2-7B: weights and 8 requests' KV caches fit in 40 GiB, 16 do not.
        var llama = new TestingEmulatedGpu(EmulatedModels.LLAMA2_7B);
        assertThat(llama.attempt(100, 8).report()).isPresent();
        assertThat(llama.attempt(100, 16).failure()).contains("out of memory");
        // Training: 12 waves of the whole GPU per kernel.
        var training = new TestingEmulatedGpu(EmulatedModels.RESNET50_TRAINING);
        assertThat(training.computeSeconds(100, 1)).isEqualTo(162 * 12 * 20e-6, offset(1e-9));
    }

    @Test
    void aModelIsInferenceWithAnSloOrTrainingWithout() {
        assertThatThrownBy(() -> new EmulatedModel("x", false, List.of(), 0, "")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new EmulatedModel("x", true, List.of(), 0.1, "")).isInstanceOf(IllegalArgumentException.class);
    }
}
