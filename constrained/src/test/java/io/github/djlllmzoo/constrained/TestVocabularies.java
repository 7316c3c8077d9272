package io.github.djlllmzoo.constrained;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;

/**
 * The vocabularies the tests run against: the real GPT-2 (byte-level BPE) and Llama 2
 * (SentencePiece with byte fallback) tokenizers of {@code ../shared/fixtures}, and a Qwen2-sized
 * byte-level vocabulary of 151,936 ids built here (GPT-2's tokens, then seeded concatenations of
 * them up to Qwen2's 151,643 ordinary tokens, then Qwen2's special and added tokens, then ids no
 * token has, as Qwen2's padded embedding has).
 */
final class TestVocabularies {

    /** Qwen2's output rows (the model's vocab_size). */
    static final int QWEN2_IDS = 151_936;
    /** Qwen2's ordinary (BPE) tokens. */
    static final int QWEN2_ORDINARY = 151_643;
    static final List<String> QWEN2_ADDED =
            List.of("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
                    "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
                    "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>", "<tool_call>",
                    "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
                    "<|repo_name|>", "<|file_sep|>");

    private static TokenVocabulary gpt2;
    private static TokenVocabulary llama2;
    private static TokenVocabulary qwen2;

    private TestVocabularies() {}

    static Path fixtures() {
        String dir = System.getProperty("llmzoo.fixtures", "../../shared/fixtures");
        return Path.of(dir);
    }

    private static String read(Path file) {
        assumeTrue(Files.isRegularFile(file), "fixture " + file + " is absent");
        try {
            return Files.readString(file, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static synchronized TokenVocabulary gpt2() {
        if (gpt2 == null) {
            gpt2 = TokenVocabulary.fromTokenizerJson(read(fixtures().resolve("gpt2-tokenizer/tokenizer.json")));
        }
        return gpt2;
    }

    static synchronized TokenVocabulary llama2() {
        if (llama2 == null) {
            llama2 = TokenVocabulary.fromTokenizerJson(read(fixtures().resolve("llama2-tokenizer/tokenizer.json")));
        }
        return llama2;
    }

    static synchronized TokenVocabulary qwen2() {
        if (qwen2 == null) {
            TokenVocabulary base = gpt2();
            List<byte[]> tokens = new ArrayList<>(QWEN2_IDS);
            Set<String> seen = new HashSet<>();
            int baseOrdinary = 50_256; // GPT-2's ordinary tokens; 50256 is <|endoftext|>
            for (int id = 0; id < baseOrdinary; id++) {
                byte[] b = base.bytes(id);
                tokens.add(b);
                seen.add(new String(b, StandardCharsets.ISO_8859_1));
            }
            SplittableRandom random = new SplittableRandom(151_936);
            while (tokens.size() < QWEN2_ORDINARY) {
                byte[] a = tokens.get(random.nextInt(tokens.size()));
                byte[] b = tokens.get(random.nextInt(baseOrdinary));
                if (a.length + b.length > 16) {
                    continue;
                }
                byte[] joined = new byte[a.length + b.length];
                System.arraycopy(a, 0, joined, 0, a.length);
                System.arraycopy(b, 0, joined, a.length, b.length);
                if (seen.add(new String(joined, StandardCharsets.ISO_8859_1))) {
                    tokens.add(joined);
                }
            }
            BitSet atomic = new BitSet();
            for (String added : QWEN2_ADDED) {
                atomic.set(tokens.size());
                tokens.add(added.getBytes(StandardCharsets.UTF_8));
            }
            while (tokens.size() < QWEN2_IDS) {
                tokens.add(new byte[0]);
            }
            qwen2 = TokenVocabulary.of(tokens, atomic);
        }
        return qwen2;
    }

    /** The id of an atomic token by its text. */
    static int atomicId(TokenVocabulary v, String text) {
        for (int id = 0; id < v.size(); id++) {
            if (v.isAtomic(id) && new String(v.bytesOf(id), StandardCharsets.UTF_8).equals(text)) {
                return id;
            }
        }
        throw new IllegalArgumentException("no atomic token " + text);
    }
}
