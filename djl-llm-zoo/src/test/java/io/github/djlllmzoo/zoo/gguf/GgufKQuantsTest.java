package io.github.djlllmzoo.zoo.gguf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.ndarray.NDManager;
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
        Path dir;
        try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
            dir = LlamaCppPeer.randomLlama(tmp.resolve("model"), manager);
        }
        Path f32 = peer.convert(dir, tmp.resolve("model-f32.gguf"));
        long[] prompt;
        float[] exact;
        try (LocalModel model = LocalModel.load(dir)) {
            prompt = model.tokenizer().encode(GgufLlamaCppParityTest.TEXT);
            exact = model.generator().scoreTokens(prompt);
        }
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

    private static double meanDifference(float[] a, float[] b) {
        double sum = 0;
        for (int i = 0; i < a.length; i++) {
            sum += Math.abs(a[i] - b[i]);
        }
        return sum / a.length;
    }
}
