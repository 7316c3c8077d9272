package io.github.djlllmzoo.constrained;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A tokenizer's vocabulary as constrained decoding sees it: the bytes each token id stands for,
 * and which tokens are atomic (special or added tokens such as {@code </s>}, {@code
 * <|im_end|>} or {@code <tool_call>}, which may only spell a literal of a constraint, never part of
 * a JSON value or a regular expression's match). Immutable and thread-safe; it keeps the constraints
 * compiled against it most recently, so a repeated constraint is compiled once.
 */
public final class TokenVocabulary {

    /** Compiled constraints kept (each keeps up to 32 MiB of masks, see {@link Matcher}). */
    private static final int COMPILED_KEPT = 16;

    private final byte[][] tokens;
    private final BitSet atomic;
    private final VocabularyTrie trie;
    private final Map<OutputConstraint, CompiledConstraint> compiled =
            new LinkedHashMap<>(16, 0.75f, true) {
                private static final long serialVersionUID = 1L;

                @Override
                protected boolean removeEldestEntry(Map.Entry<OutputConstraint, CompiledConstraint> eldest) {
                    return size() > COMPILED_KEPT;
                }
            };

    private TokenVocabulary(byte[][] tokens, BitSet atomic) {
        this.tokens = tokens;
        this.atomic = atomic;
        this.trie = new VocabularyTrie(tokens, atomic);
    }

    /**
     * @param tokenBytes the bytes of each token id ({@code null} or empty for ids that never occur)
     * @param atomic the special and added tokens
     * @return the vocabulary
     */
    public static TokenVocabulary of(List<byte[]> tokenBytes, BitSet atomic) {
        byte[][] tokens = new byte[tokenBytes.size()][];
        for (int i = 0; i < tokens.length; i++) {
            byte[] b = tokenBytes.get(i);
            tokens[i] = b == null ? new byte[0] : b.clone();
        }
        return new TokenVocabulary(tokens, (BitSet) atomic.clone());
    }

    /**
     * Reads a Hugging Face {@code tokenizer.json}: a BPE or Unigram model whose tokens are
     * byte-level (GPT-2, Llama 3, Qwen: decoded through {@link ByteLevelAlphabet}) or
     * SentencePiece-style ({@code ▁} for a space, {@code <0xNN>} byte-fallback tokens: Llama 2,
     * Mistral, Gemma), its added tokens atomic.
     *
     * @param json the file's text
     * @return the vocabulary
     * @throws IllegalArgumentException if the file has no BPE or Unigram vocabulary
     */
    public static TokenVocabulary fromTokenizerJson(String json) {
        JsonObject root = JsonParser.parseString(json).getAsJsonObject();
        JsonObject model = root.getAsJsonObject("model");
        String decoder = String.valueOf(root.get("decoder")) + String.valueOf(root.get("pre_tokenizer"));
        boolean byteLevel = decoder.contains("\"ByteLevel\"");
        boolean byteFallback =
                model.has("byte_fallback") && model.get("byte_fallback").getAsBoolean()
                        || decoder.contains("\"ByteFallback\"");
        List<String> pieces = new ArrayList<>();
        JsonElement vocab = model.get("vocab");
        if (vocab != null && vocab.isJsonObject()) {
            for (Map.Entry<String, JsonElement> e : vocab.getAsJsonObject().entrySet()) {
                set(pieces, e.getValue().getAsInt(), e.getKey());
            }
        } else if (vocab != null && vocab.isJsonArray()) {
            JsonArray list = vocab.getAsJsonArray();
            for (int i = 0; i < list.size(); i++) {
                set(pieces, i, list.get(i).getAsJsonArray().get(0).getAsString());
            }
        } else {
            throw new IllegalArgumentException("tokenizer.json: model.vocab is neither a BPE map nor a Unigram list");
        }
        BitSet atomic = new BitSet();
        JsonArray added = root.has("added_tokens") ? root.getAsJsonArray("added_tokens") : new JsonArray();
        for (JsonElement e : added) {
            JsonObject t = e.getAsJsonObject();
            int id = t.get("id").getAsInt();
            set(pieces, id, t.get("content").getAsString());
            atomic.set(id);
        }
        List<byte[]> bytes = new ArrayList<>(pieces.size());
        for (int id = 0; id < pieces.size(); id++) {
            String piece = pieces.get(id);
            if (piece == null) {
                bytes.add(null);
            } else if (atomic.get(id)) {
                bytes.add(piece.getBytes(StandardCharsets.UTF_8));
            } else if (byteLevel) {
                byte[] b = ByteLevelAlphabet.decode(piece);
                bytes.add(b != null ? b : piece.getBytes(StandardCharsets.UTF_8));
            } else {
                bytes.add(sentencePieceBytes(piece, byteFallback));
            }
        }
        return of(bytes, atomic);
    }

    private static void set(List<String> pieces, int id, String piece) {
        while (pieces.size() <= id) {
            pieces.add(null);
        }
        pieces.set(id, piece);
    }

    private static byte[] sentencePieceBytes(String piece, boolean byteFallback) {
        if (byteFallback && piece.length() == 6 && piece.startsWith("<0x") && piece.endsWith(">")) {
            try {
                return new byte[] {(byte) Integer.parseInt(piece.substring(3, 5), 16)};
            } catch (NumberFormatException e) {
                // not a byte token: an ordinary piece
            }
        }
        return piece.replace('\u2581', ' ').getBytes(StandardCharsets.UTF_8);
    }

    /** @return the number of token ids */
    public int size() {
        return tokens.length;
    }

    /**
     * @param id a token id
     * @return the bytes it stands for (empty for an id that never occurs); do not modify
     */
    byte[] bytesOf(int id) {
        return tokens[id];
    }

    /**
     * @param id a token id
     * @return a copy of the bytes it stands for
     */
    public byte[] bytes(int id) {
        return tokens[id].clone();
    }

    /**
     * @param id a token id
     * @return whether it is a special or added token
     */
    public boolean isAtomic(int id) {
        return id < tokens.length && atomic.get(id);
    }

    BitSet atomicTokens() {
        return atomic;
    }

    VocabularyTrie trie() {
        return trie;
    }

    /**
     * Compiles a constraint against this vocabulary, or returns the one compiled before for an
     * equal constraint.
     *
     * @param constraint the constraint
     * @return the compiled constraint
     * @throws InvalidConstraintException if the constraint is malformed or unsupported, naming
     *     where
     */
    public CompiledConstraint compile(OutputConstraint constraint) {
        synchronized (compiled) {
            CompiledConstraint c = compiled.get(constraint);
            if (c != null) {
                return c;
            }
        }
        CompiledConstraint c = CompiledConstraint.compile(constraint, this);
        synchronized (compiled) {
            compiled.putIfAbsent(constraint, c);
            return compiled.get(constraint);
        }
    }

    @Override
    public String toString() {
        return "TokenVocabulary[" + tokens.length + " tokens, " + atomic.cardinality() + " atomic]";
    }
}
