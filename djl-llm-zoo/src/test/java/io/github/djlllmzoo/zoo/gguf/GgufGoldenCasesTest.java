package io.github.djlllmzoo.zoo.gguf;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.ndarray.types.DataType;
import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.github.djlllmzoo.blocks.CompressedWeight;
import io.github.djlllmzoo.blocks.EngineKernels;
import io.github.djlllmzoo.blocks.WeightFormat;
import io.github.djlllmzoo.translators.GenerationConfig;
import io.github.djlllmzoo.zoo.LocalModel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every family's golden checkpoint written as a GGUF file the way llama.cpp's converter writes it
 * loads to the same model: F32 gives the safetensors checkpoint's log-probabilities (the same
 * float32 values in the same order: to float32 rounding) and the golden greedy ids; Q8_0 and Q4_0
 * load as our int8 (Q4_0 as our int4 too) without re-quantizing and score as the file's values
 * widened to float32 do, int4 through the CPU kernels as through the reference.
 */
class GgufGoldenCasesTest {

    /** Same weights, same float32 operations: only summation order may differ between two loads. */
    private static final double SAME_MODEL_TOLERANCE = 1e-4;

    /** The golden answers' tolerance in float32 (the fixtures' README). */
    private static final double GOLDEN_TOLERANCE = 1e-3;

    @TempDir Path tmp;

    static Stream<String> cases() {
        return Stream.of(
                "gpt2-tiny", "gpt2-f16", "gpt2-wide", "llama-gqa", "llama-mqa-tied-bf16", "llama3-rope-scaling",
                "mistral-sliding-window",
                "qwen2-bias", "qwen2-tied-bf16", "qwen3-qknorm", "phi3-fused", "gemma-bf16",
                "gemma2-softcap-window", "gemma3-local-global");
    }

    private static Path golden(String name) {
        return Path.of(System.getProperty("llmzoo.testdata"), "golden", name);
    }

    private static JsonObject answers(String name) throws Exception {
        return JsonParser.parseString(Files.readString(golden(name).resolve("golden.json"), StandardCharsets.UTF_8))
                .getAsJsonObject();
    }

    private static long[] longs(JsonArray a) {
        long[] out = new long[a.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = a.get(i).getAsLong();
        }
        return out;
    }

    /** The largest |a - b| of two equally long score lists. */
    static double maxDifference(float[] a, float[] b) {
        assertEquals(a.length, b.length);
        double max = 0;
        for (int i = 0; i < a.length; i++) {
            max = Math.max(max, Math.abs(a[i] - b[i]));
        }
        return max;
    }

    @ParameterizedTest
    @MethodSource("cases")
    void f32GgufScoresAsTheSafetensorsCheckpointAndGeneratesTheGoldenIds(String name) throws Exception {
        JsonObject answers = answers(name);
        long[] prompt = longs(answers.getAsJsonArray("prompt_ids"));
        long[] greedy = longs(answers.getAsJsonArray("greedy_ids"));
        Path file = tmp.resolve(name + "-f32.gguf");
        GoldenGguf.write(golden(name), file, GgufType.F32);
        float[] reference;
        try (LocalModel model = LocalModel.load(golden(name))) {
            reference = model.generator().scoreTokens(prompt);
        }
        try (LocalModel model = LocalModel.load(file)) {
            float[] logprobs = model.generator().scoreTokens(prompt);
            double fromCheckpoint = maxDifference(logprobs, reference);
            JsonArray expected = answers.getAsJsonArray("prompt_logprobs");
            double fromGolden = 0;
            for (int i = 0; i < logprobs.length; i++) {
                fromGolden = Math.max(fromGolden, Math.abs(logprobs[i] - expected.get(i).getAsDouble()));
            }
            System.out.printf(Locale.ROOT, "gguf %s: max |logprob - safetensors| = %.3g, - golden = %.3g%n",
                    name, fromCheckpoint, fromGolden);
            assertTrue(fromCheckpoint <= SAME_MODEL_TOLERANCE, name + ": " + fromCheckpoint);
            assertTrue(fromGolden <= GOLDEN_TOLERANCE, name + ": " + fromGolden);
            GenerationConfig config =
                    GenerationConfig.builder().maxNewTokens(greedy.length).eosTokenIds(List.of()).build();
            assertArrayEquals(greedy, model.generator().generateGreedy(prompt, config).tokenIds(), name);
        }
    }

    /** The cases all of whose weights' rows are whole Q8_0/Q4_0 blocks (Llama's 172-wide MLP is not). */
    static Stream<String> quantizableCases() {
        return cases().filter(name -> !name.startsWith("llama"));
    }

    @ParameterizedTest
    @MethodSource("quantizableCases")
    void quantizedGgufLoadsAsInt8AndScoresAsItsWidenedValues(String name) throws Exception {
        long[] prompt = longs(answers(name).getAsJsonArray("prompt_ids"));
        String off = System.getProperty("llmzoo.cpu.off");
        // the prefill's widening path (-Dllmzoo.cpu.off=compressedGemm, read when a model's CPU kernels
        // are made): the int8 products are then the widened weight's float32 products
        System.setProperty("llmzoo.cpu.off", "compressedGemm");
        try {
            for (GgufType type : new GgufType[] {GgufType.Q8_0, GgufType.Q4_0}) {
                Path file = tmp.resolve(name + "-" + type + ".gguf");
                GoldenGguf.write(golden(name), file, type);
                float[] widened;
                Class<?> int8Kernels;
                try (LocalModel model = LocalModel.load(file, Device.cpu(), DataType.FLOAT32, WeightFormat.FLOAT32)) {
                    widened = model.generator().scoreTokens(prompt);
                }
                try (LocalModel model = LocalModel.load(file)) {
                    var compressed = model.block().compressedWeights().values();
                    assertTrue(!compressed.isEmpty() && compressed.stream().allMatch(w -> w.format() == WeightFormat.INT8),
                            name + " " + type + ": loads as int8");
                    double difference = maxDifference(model.generator().scoreTokens(prompt), widened);
                    System.out.printf(Locale.ROOT, "gguf %s %s: max |logprob int8 - widened| = %.3g%n",
                            name, type, difference);
                    assertTrue(difference <= SAME_MODEL_TOLERANCE, name + " " + type + ": " + difference);
                    int8Kernels = model.block().kernels().getClass();
                }
                if (type == GgufType.Q4_0) {
                    try (LocalModel model = LocalModel.load(file, Device.cpu(), DataType.FLOAT32, WeightFormat.INT4)) {
                        var compressed = model.block().compressedWeights().values();
                        assertTrue(!compressed.isEmpty() && compressed.stream().allMatch(w -> w.format() == WeightFormat.INT4),
                                name + ": Q4_0 loads as int4");
                        float[] kernels = model.generator().scoreTokens(prompt);
                        assertEquals(int8Kernels, model.block().kernels().getClass(), "int4 takes int8's kernels");
                        double difference = maxDifference(kernels, widened);
                        assertTrue(difference <= SAME_MODEL_TOLERANCE, name + " int4: " + difference);
                        // the reference widens the same codes: only the order of the float32 sums differs
                        model.block().useKernels(EngineKernels.INSTANCE);
                        double reference = maxDifference(kernels, model.generator().scoreTokens(prompt));
                        System.out.printf(Locale.ROOT, "gguf %s int4: max |logprob kernels - reference| = %.3g%n",
                                name, reference);
                        assertTrue(reference <= SAME_MODEL_TOLERANCE, name + " int4 against the reference: " + reference);
                    }
                }
            }
        } finally {
            if (off == null) {
                System.clearProperty("llmzoo.cpu.off");
            } else {
                System.setProperty("llmzoo.cpu.off", off);
            }
        }
    }

    @Test
    void q8_0BlocksBecomeInt8CodesAndScalesBitForBit() throws Exception {
        float[] values = new float[4 * 64];
        java.util.Random random = new java.util.Random(7);
        for (int i = 0; i < values.length; i++) {
            values[i] = (float) random.nextGaussian();
        }
        Path file = tmp.resolve("q8.gguf");
        new GgufWriter().put("general.architecture", "llama").tensor("w", new long[] {4, 64}, GgufType.Q8_0, values)
                .write(file);
        byte[] stored = GgufWriter.encode(GgufType.Q8_0, values);
        try (GgufFile gguf = GgufFile.open(file)) {
            CompressedWeight w = GgufWeights.compressed(gguf.require("w"), 0, WeightFormat.INT8);
            java.nio.ByteBuffer[] buffers = w.directBuffers();
            for (int block = 0; block < 8; block++) {
                int at = block * GgufType.Q8_0.blockBytes();
                short scale = (short) ((stored[at] & 0xFF) | (stored[at + 1] << 8));
                assertEquals(scale, buffers[1].getShort(2 * block), "scale of block " + block);
                for (int k = 0; k < 32; k++) {
                    assertEquals(stored[at + 2 + k], buffers[0].get(32 * block + k), "code " + k + " of block " + block);
                }
            }
        }
    }

    @Test
    void q4_0BlocksBecomeInt4CodesAndScalesBitForBit() throws Exception {
        float[] values = new float[4 * 64];
        java.util.Random random = new java.util.Random(8);
        for (int i = 0; i < values.length; i++) {
            values[i] = (float) random.nextGaussian();
        }
        Path file = tmp.resolve("q4.gguf");
        new GgufWriter().put("general.architecture", "llama").tensor("w", new long[] {4, 64}, GgufType.Q4_0, values)
                .write(file);
        byte[] stored = GgufWriter.encode(GgufType.Q4_0, values);
        try (GgufFile gguf = GgufFile.open(file)) {
            CompressedWeight w = GgufWeights.compressed(gguf.require("w"), 0, WeightFormat.INT4);
            java.nio.ByteBuffer[] buffers = w.directBuffers();
            for (int block = 0; block < 8; block++) {
                int at = block * GgufType.Q4_0.blockBytes();
                short scale = (short) ((stored[at] & 0xFF) | (stored[at + 1] << 8));
                assertEquals(scale, buffers[1].getShort(2 * block), "scale of block " + block);
                for (int k = 0; k < 16; k++) {
                    assertEquals(stored[at + 2 + k], buffers[0].get(16 * block + k), "codes " + k + " of block " + block);
                }
            }
        }
    }

    /**
     * Per-frequency rotary factors we cannot express: ones that fall and rise again (no band of Llama
     * 3.1's scaling gives them) and Phi-3's LongRoPE factors (our Phi-3 has no LongRoPE).
     */
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "llama-gqa | rope_freqs.weight |",
        // LongRoPE: on an architecture llama.cpp gives no LongRoPE, one set without the other, a wrong length
        "llama-gqa | rope_factors_long.weight rope_factors_short.weight |",
        "phi3-fused | rope_factors_long.weight |",
        "phi3-fused | rope_factors_short.weight rope_factors_long.weight | 5"
    })
    void rotaryFactorsWeCannotExpressAreRefusedNamingTheTensor(String name, String factorTensors, Integer length)
            throws Exception {
        Path file = tmp.resolve(name + ".gguf");
        GoldenGguf.write(golden(name), file, GgufType.F32);
        GgufWriter rewritten = new GgufWriter();
        try (GgufFile gguf = GgufFile.open(file)) {
            for (var e : gguf.metadata().values().entrySet()) {
                Object v = e.getValue();
                rewritten.put(e.getKey(), v instanceof Long l ? new GgufWriter.U32(l) : v);
            }
            for (GgufTensor t : gguf.tensors().values()) {
                rewritten.tensor(t.name(), t.shape().getShape(), GgufType.F32, t.toFloatArray());
            }
        }
        String[] tensors = factorTensors.split(" ");
        float[] factors = java.util.Arrays.copyOf(new float[] {1, 3, 1, 8, 8, 2, 8, 8}, length == null ? 8 : length);
        for (String tensor : tensors) {
            rewritten.tensor(tensor, new long[] {factors.length}, GgufType.F32, factors);
        }
        Path withFactors = tmp.resolve(name + "-factors.gguf");
        rewritten.write(withFactors);
        InvalidGgufException e = assertThrows(InvalidGgufException.class, () -> LocalModel.load(withFactors));
        assertTrue(e.getMessage().contains(tensors[0]) && e.getMessage().contains(withFactors.toString()),
                e.getMessage());
    }
}
