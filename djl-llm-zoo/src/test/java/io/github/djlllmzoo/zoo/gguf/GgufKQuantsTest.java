package io.github.djlllmzoo.zoo.gguf;

import static io.github.djlllmzoo.zoo.gguf.LlamaCppPeer.meanDifference;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.ndarray.types.DataType;
import io.github.djlllmzoo.blocks.WeightFormat;
import io.github.djlllmzoo.zoo.LocalModel;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.EnumSet;
import java.util.Locale;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * llama.cpp's own quantizer ({@code llama-quantize}) writes Q4_K_M, Q5_K_M, Q6_K, Q8_0 and Q4_0
 * files of a random Llama with 256-wide rows; every tensor we decode equals what llama.cpp's Python
 * package dequantizes, and the k-quants' conversion to our int8 at load costs less accuracy than
 * the 4-bit quantization itself did (float16 less still). Skipped where the peer is not built.
 */
class GgufKQuantsTest {

    @TempDir Path tmp;

    @Test
    void decodedTensorsEqualLlamaCppsDequantizationAndInt8CostsLessThanTheQuantization() throws Exception {
        LlamaCppPeer peer = LlamaCppPeer.require();
        LlamaCppPeer.RandomLlama llama = peer.randomLlama(tmp);
        Path dir = llama.dir();
        Path f32 = llama.f32();
        long[] prompt = llama.prompt();
        float[] exact = llama.exact();
        Set<GgufType> seen = EnumSet.noneOf(GgufType.class);
        for (String type : new String[] {"Q4_K_M", "Q5_K_M", "Q6_K", "Q8_0", "Q4_0"}) {
            Path file = peer.quantize(f32, tmp.resolve("model-" + type + ".gguf"), type);
            Path reference = peer.dequantize(file, tmp.resolve("deq-" + type));
            try (GgufFile gguf = GgufFile.open(file)) {
                for (GgufTensor t : gguf.tensors().values()) {
                    seen.add(t.type());
                    float[] ours = t.toFloatArray();
                    ByteBuffer theirs = ByteBuffer.wrap(Files.readAllBytes(reference.resolve(t.name() + ".f32")))
                            .order(ByteOrder.LITTLE_ENDIAN);
                    assertEquals(ours.length * 4, theirs.capacity(), t.toString());
                    for (int i = 0; i < ours.length; i++) {
                        float expected = theirs.getFloat(4 * i);
                        // numpy may group d * sc * q differently from ggml's C: one rounding apart
                        assertEquals(expected, ours[i], Math.ulp(expected) * 2 + 1e-12f, t + " element " + i);
                    }
                }
            }
            if (type.equals("Q4_0")) {
                // the accuracy bound: our int4 of the float32 weights against llama.cpp's Q4_0 of them
                double ours;
                double theirs;
                try (LocalModel int4 = LocalModel.load(dir, WeightFormat.INT4)) {
                    ours = meanDifference(int4.generator().scoreTokens(prompt), exact);
                }
                try (LocalModel q4 = LocalModel.load(file, Device.cpu(), DataType.FLOAT32, WeightFormat.FLOAT32)) {
                    theirs = meanDifference(q4.generator().scoreTokens(prompt), exact);
                }
                System.out.printf(Locale.ROOT, "int4: mean |logprob - float32| per token %.4g; llama-quantize's Q4_0 of the"
                        + " same weights %.4g%n", ours, theirs);
                assertTrue(ours <= 1.1 * theirs, "int4 " + ours + " vs Q4_0 " + theirs);
            }
            if (type.endsWith("_M")) {
                double quantization;
                double conversion;
                double toFloat16;
                try (LocalModel widened = LocalModel.load(file, Device.cpu(), DataType.FLOAT32, WeightFormat.FLOAT32)) {
                    float[] kquant = widened.generator().scoreTokens(prompt);
                    quantization = meanDifference(kquant, exact);
                    try (LocalModel int8 = LocalModel.load(file, Device.cpu(), DataType.FLOAT32, WeightFormat.INT8)) {
                        conversion = meanDifference(int8.generator().scoreTokens(prompt), kquant);
                    }
                    try (LocalModel half = LocalModel.load(file, Device.cpu(), DataType.FLOAT32, WeightFormat.FLOAT16)) {
                        toFloat16 = meanDifference(half.generator().scoreTokens(prompt), kquant);
                    }
                }
                System.out.printf(Locale.ROOT, "gguf %s: mean |logprob - float32| per token %.3g; converting to int8"
                        + " at load adds %.3g, to float16 %.3g%n", type, quantization, conversion, toFloat16);
                // int8 has 255 levels per group of 32 where the k-quants have 16 or 32 per 32: its
                // rounding is several times finer than the one the file already carries
                assertTrue(conversion < quantization, type + ": " + conversion + " vs " + quantization);
                // float16 keeps 11 significant bits of each decoded weight, int8 about 7
                assertTrue(toFloat16 < conversion, type + ": float16 " + toFloat16 + " vs int8 " + conversion);
            }
        }
        assertTrue(seen.containsAll(EnumSet.of(GgufType.Q4_K, GgufType.Q5_K, GgufType.Q6_K, GgufType.Q8_0,
                GgufType.Q4_0, GgufType.F32)), "types decoded: " + seen);
    }

    /**
     * The accuracy rule for Q5_K and Q6_K, which we hold as int8 (re-quantized per group of
     * 32 at load): a Q5_K_M or Q6_K file loaded as we load it changes the mean |logprob| per token
     * from our float32 no more than llama.cpp running the same file changes it from llama.cpp's F32,
     * +10% (the allowance for our own 4-bit formats against llama.cpp's). Both sides add
     * their own rounding to the file's: llama.cpp its 8-bit activations (Q8_K), we our int8 grid
     * (steps of max|w| / 127 per 32 weights, several times finer than Q5_K's and Q6_K's).
     */
    @Test
    void q5kmAndQ6kFilesLoadedAsInt8CostNoMoreThanLlamaCppRunningThem() throws Exception {
        LlamaCppPeer peer = LlamaCppPeer.require();
        LlamaCppPeer.RandomLlama llama = peer.randomLlama(tmp);
        float[] theirsF32 = peer.score(llama.f32(), llama.prompt());
        double parity = meanDifference(theirsF32, llama.exact());
        System.out.printf(Locale.ROOT, "llama.cpp F32 vs our float32: mean |logprob difference| %.3g%n", parity);
        for (String type : new String[] {"Q5_K_M", "Q6_K"}) {
            Path file = peer.quantize(llama.f32(), tmp.resolve("model-" + type + ".gguf"), type);
            try (GgufFile gguf = GgufFile.open(file)) {
                assertEquals(WeightFormat.INT8, GgufCheckpoint.nativeFormat(gguf), type + " loads as int8");
            }
            double theirs = meanDifference(peer.score(file, llama.prompt()), theirsF32);
            double ours;
            double widened;
            try (LocalModel model = LocalModel.load(file)) {
                ours = meanDifference(model.generator().scoreTokens(llama.prompt()), llama.exact());
            }
            try (LocalModel model = LocalModel.load(file, Device.cpu(), DataType.FLOAT32, WeightFormat.FLOAT32)) {
                widened = meanDifference(model.generator().scoreTokens(llama.prompt()), llama.exact());
            }
            System.out.printf(Locale.ROOT, "gguf %s: mean |logprob - F32| per token: ours (int8) %.4g, llama.cpp %.4g,"
                    + " the file's values in float32 %.4g%n", type, ours, theirs, widened);
            assertTrue(ours <= 1.1 * theirs, type + ": ours " + ours + " vs llama.cpp " + theirs);
            // the two F32 runs agree far closer than either quantized run is from them
            assertTrue(parity < theirs / 10, type + ": F32 parity " + parity + " vs " + theirs);
        }
    }
}
