package io.github.djlllmzoo.zoo.gguf;

import static io.github.djlllmzoo.zoo.gguf.LlamaCppPeer.meanDifference;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.ndarray.types.DataType;
import io.github.djlllmzoo.blocks.CompressedWeight;
import io.github.djlllmzoo.blocks.WeightFormat;
import io.github.djlllmzoo.zoo.LocalModel;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Locale;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Our q4_k against llama.cpp's Q4_K on the same random Llama (needs the peer: skipped otherwise):
 * quantizing at load writes llama-quantize's own Q4_K bytes, a Q4_K tensor of a GGUF file is held
 * as q4_k byte for byte, and a model in q4_k costs no more accuracy than llama.cpp's Q4_K_M of the
 * same weights (the bound: +10%).
 */
class GgufQ4KTest {

    @TempDir Path tmp;

    @Test
    void q4kQuantizesAsLlamaQuantizeLoadsItsBlocksBitForBitAndCostsNoMoreThanQ4KM() throws Exception {
        LlamaCppPeer peer = LlamaCppPeer.require();
        LlamaCppPeer.RandomLlama llama = peer.randomLlama(tmp);
        Path f32 = llama.f32();
        Path pure = peer.quantize(f32, tmp.resolve("model-q4_k.gguf"), "Q4_K_S", "--pure");
        long tensors = 0;
        long blocks = 0;
        long differing = 0;
        try (GgufFile source = GgufFile.open(f32); GgufFile quantized = GgufFile.open(pure)) {
            for (GgufTensor t : quantized.tensors().values()) {
                if (t.type() != GgufType.Q4_K) {
                    continue;
                }
                tensors++;
                int out = Math.toIntExact(t.rows());
                int in = t.rowLength();
                CompressedWeight loaded = GgufWeights.compressed(t, 0, WeightFormat.Q4_K);
                assertEquals(WeightFormat.Q4_K, loaded.format(), t.name());
                CompressedWeight ours = GgufWeights.compressed(source.require(t.name()), 0, WeightFormat.Q4_K);
                ByteBuffer held = loaded.codes();
                ByteBuffer quantizedHere = ours.codes();
                for (int r = 0; r < out; r++) {
                    ByteBuffer stored = t.rowBytes(r);
                    int rowBytes = Math.toIntExact(GgufType.Q4_K.bytes(in));
                    for (int k = 0; k < rowBytes; k++) {
                        assertEquals(stored.get(stored.position() + k), held.get(r * rowBytes + k),
                                t.name() + " row " + r + " byte " + k + " held as the file has it");
                    }
                    for (int b = 0; b < rowBytes; b += GgufType.Q4_K.blockBytes()) {
                        blocks++;
                        for (int k = b; k < b + GgufType.Q4_K.blockBytes(); k++) {
                            if (stored.get(stored.position() + k) != quantizedHere.get(r * rowBytes + k)) {
                                differing++;
                                break;
                            }
                        }
                    }
                }
            }
        }
        System.out.printf(Locale.ROOT, "q4_k: %d of %d super-blocks of %d tensors differ from llama-quantize's%n",
                differing, blocks, tensors);
        assertTrue(tensors > 0 && blocks > 0, "the pure file has Q4_K tensors");
        // the same algorithm; float32 sums in another order may move a rare tie
        assertTrue(differing <= blocks / 1000, differing + " of " + blocks + " super-blocks differ");

        long[] prompt = llama.prompt();
        float[] exact = llama.exact();
        double ours;
        try (LocalModel q4k = LocalModel.load(llama.dir(), WeightFormat.Q4_K)) {
            ours = meanDifference(q4k.generator().scoreTokens(prompt), exact);
        }
        double theirsPure = widenedDifference(pure, prompt, exact);
        double theirs = widenedDifference(peer.quantize(f32, tmp.resolve("model-q4_k_m.gguf"), "Q4_K_M"), prompt, exact);
        System.out.printf(Locale.ROOT, "q4_k: mean |logprob - float32| per token %.4g; llama-quantize's Q4_K_M of the"
                + " same weights %.4g, its pure Q4_K %.4g%n", ours, theirs, theirsPure);
        assertTrue(ours <= 1.1 * theirs, "q4_k " + ours + " vs Q4_K_M " + theirs);
    }

    /** A file's weights as it stands for them, computed in float32, against the float32 model. */
    private static double widenedDifference(Path file, long[] prompt, float[] exact) throws Exception {
        try (LocalModel model = LocalModel.load(file, Device.cpu(), DataType.FLOAT32, WeightFormat.FLOAT32)) {
            return meanDifference(model.generator().scoreTokens(prompt), exact);
        }
    }
}
