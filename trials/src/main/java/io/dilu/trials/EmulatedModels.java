package io.dilu.trials;

import java.util.List;
import java.util.Optional;

/**
 * The models profiled on the emulated GPU: four inference functions of different shapes and one training job.
 *
 * <p>Each shape was derived from public facts about the model it stands for, by one rule; none was adjusted
 * to make a search look good (docs/profiler.md tells the two corrections made on the facts, both of which
 * lowered the search's figures). The emulated GPU is an A100 (108 SMs, one
 * block slot each, 40 GiB; hook-native/docs/emulated-gpu.md), a kernel of B blocks of U µs takes
 * ⌈B / SMs it may use⌉ × U, and a batch of n requests launches kernels of ⌈blocks + X·(n − 1)⌉ blocks
 * ({@code --blocks-per-item X}). The rule: one emulated kernel per kernel an inference engine runs (layers with
 * their bias, normalisation and activation fused); a grid per request from the model's tiles or FLOPs; compute
 * at half an A100's 312 TFLOP/s FP16 tensor peak (156 TFLOP/s), memory-bound work at its 1,555 GB/s; SLOs
 * from MLPerf Inference's server latency bounds (mlcommons/inference_policies, inference_rules.adoc). These are
 * models of the models, not measurements of them; what they reproduce is the structure (many small kernels, a
 * few large ones, an underfilled GPU, memory that bounds the batch), not any GPU's exact times.
 */
public final class EmulatedModels {

    private EmulatedModels() {}

    /**
     * ResNet-50: many kernels whose grid grows with the batch. 53 convolutions and a classifier (He et al.,
     * 2016, Table 1), so 54 kernels; 3.8 GMACs = 7.6 GFLOP per 224×224 image is 48.7 µs of a whole A100 at
     * 156 TFLOP/s, i.e. 97 µs·SM per kernel per image; at 20 µs per block (54 kernels: about a millisecond at
     * batch 1, where the GPU runs one small kernel after another) that is 5 blocks per image, and a
     * convolution's grid is proportional to the batch (its GEMM rows are images × output pixels). SLO 15 ms
     * (MLPerf server bound for ResNet-50 v1.5). Memory: 25.6 M FP16 weights, 49 MiB; per image the largest
     * layer's input and output (224×224×3 and 112×112×64 FP16), 2 MiB.
     */
    public static final EmulatedModel RESNET50 = new EmulatedModel("resnet50", false,
            List.of("--kernels", "54", "--blocks", "5", "--blocks-per-item", "5", "--block-us", "20", "--memory-mib", "49",
                    "--memory-per-item-mib", "2"), 0.015,
            "54 kernels (53 convolutions + classifier), 5 blocks of 20 us per image: 7.6 GFLOP/image at 156 TFLOP/s; SLO 15 ms (MLPerf)");

    /**
     * BERT-Large on SQuAD at 384 tokens: large kernels that half-fill the GPU at batch 1. 24 layers, hidden
     * 1024, 16 heads, FFN 4096 (Devlin et al., 2019); 5 kernels per layer (QKV, fused attention, output, FFN up,
     * FFN down), 120 in all; 128×128 output tiles of one 384-token sequence: 72, 48, 24, 96 and 24 blocks, 53 on
     * average, proportional to the batch. 2 × 302 M layer weights × 384 tokens + 14.5 GFLOP of attention =
     * 246 GFLOP per sequence, 1.58 ms of the GPU at 156 TFLOP/s: 27 µs per block. SLO 130 ms (MLPerf, BERT).
     * Memory: 335 M FP16 weights, 639 MiB; per sequence the FFN's 384×4096 activations (3 MiB) and 16 heads'
     * 384×384 attention scores (4.5 MiB), 8 MiB.
     */
    public static final EmulatedModel BERT_LARGE = new EmulatedModel("bert-large", false,
            List.of("--kernels", "120", "--blocks", "53", "--blocks-per-item", "53", "--block-us", "27", "--memory-mib", "639",
                    "--memory-per-item-mib", "8"), 0.130,
            "120 kernels (24 layers x 5), 53 blocks of 27 us per 384-token sequence: 246 GFLOP at 156 TFLOP/s; SLO 130 ms (MLPerf)");

    /**
     * MobileNet-v1: a small model whose kernels underfill the GPU even at batch 32. 28 layers with weights
     * (Howard et al., 2017, Table 1), so 28 kernels; 569 M MACs = 1.14 GFLOP per image is 7.3 µs of the GPU at
     * 156 TFLOP/s, 28 µs·SM per kernel per image: at 10 µs per block (a few hundred µs at batch 1) 3 blocks per
     * image, so 96 blocks at batch 32, less than the 108 SMs. SLO 10 ms (MLPerf v0.5 server bound, MobileNet-v1).
     * Memory: 4.2 M FP16 weights, 8 MiB; per image the first layers' 112×112×32 FP16 input and output, 2 MiB.
     */
    public static final EmulatedModel MOBILENET = new EmulatedModel("mobilenet-v1", false,
            List.of("--kernels", "28", "--blocks", "3", "--blocks-per-item", "3", "--block-us", "10", "--memory-mib", "8",
                    "--memory-per-item-mib", "2"), 0.010,
            "28 kernels, 3 blocks of 10 us per image: 1.14 GFLOP/image at 156 TFLOP/s; SLO 10 ms (MLPerf v0.5)");

    /**
     * One decoding step of Llama-2-7B: heavy memory per request. 32 layers, hidden 4096, 32 heads, context 4096
     * (Touvron et al., 2023): 6.74 B FP16 weights are 12,853 MiB, and a request's KV cache at full context is
     * 2 × 32 layers × 4096 × 4096 tokens × 2 bytes = 2,048 MiB, so weights and 16 requests (45,621 MiB) do not fit
     * in 40 GiB. A step is memory-bound: reading the weights takes 8.7 ms at 1,555 GB/s. 9 kernels per layer (2
     * norms, QKV, rotary, attention, output, gate-up, activation, down), 288; the weight-bound kernels are launched
     * over every SM (108 blocks) whatever the batch, and attention adds 32 heads' blocks per request in one of the
     * 9, 3.6 per request on average; 8.7 ms × 108 SMs / (288 × 108) = 30 µs per block. SLO: MLPerf's time per
     * output token for the 8 B-class model (Llama 3.1 8B, conversational), 100 ms.
     */
    public static final EmulatedModel LLAMA2_7B = new EmulatedModel("llama2-7b-decode", false,
            List.of("--kernels", "288", "--blocks", "108", "--blocks-per-item", "3.6", "--block-us", "30",
                    "--memory-mib", "12853", "--memory-per-item-mib", "2048"), 0.100,
            "288 kernels of 108 blocks + 3.6 per request, 30 us: 13.5 GB of weights at 1,555 GB/s; 12,853 MiB + 2,048 MiB KV per request; TPOT 100 ms (MLPerf)");

    /**
     * ResNet-50 training, data parallel on 8 GPUs, 256 images per GPU: many waves per kernel, then
     * communication. 54 kernels forward and twice that backward (input and weight gradients), 162; the inference
     * model's 5 blocks of 20 µs per image give 1,280 blocks per kernel, 12 waves of the 108 SMs (38.9 ms of
     * compute; 3 × 7.6 GFLOP × 256 at 156 TFLOP/s is 37.4 ms). Then the ring all-reduce of 25.6 M FP32 gradients:
     * 2 × 7/8 × 102 MB over 100 Gb/s is 14 ms, not overlapped with compute (emu-train's model).
     */
    public static final EmulatedModel RESNET50_TRAINING = new EmulatedModel("resnet50-train", true,
            List.of("--kernels", "162", "--blocks", "1280", "--block-us", "20", "--gap-ms", "14"), 0,
            "162 kernels of 1,280 blocks of 20 us (256 images/GPU), then a 14 ms all-reduce of 102 MB over 100 Gb/s");

    /** Inference first, in the order above, then the training job. */
    public static final List<EmulatedModel> ALL = List.of(RESNET50, BERT_LARGE, MOBILENET, LLAMA2_7B, RESNET50_TRAINING);

    public static Optional<EmulatedModel> named(String name) {
        return ALL.stream().filter(m -> m.name().equals(name)).findFirst();
    }

    public static List<String> names() {
        return ALL.stream().map(EmulatedModel::name).toList();
    }
}
