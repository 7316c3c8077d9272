package io.github.djlllmzoo.defaultmodel;

import io.github.djlllmzoo.constrained.ByteLevelAlphabet;
import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.PriorityQueue;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Trains a GPT-2 style byte-level BPE tokenizer and returns it as a {@link TrainedTokenizer}, which
 * saves the Hugging Face {@code tokenizer.json} (plus {@code tokenizer_config.json} and {@code
 * special_tokens_map.json}) that DJL's {@code HuggingFaceTokenizer} loads.
 *
 * <p>Vocabulary layout (ids):
 *
 * <ol>
 *   <li>the special tokens, in the order given: with the default {@code [<|endoftext|>, <pad>]},
 *       {@code <|endoftext|>} is 0 and {@code <pad>} is 1 (as the Hugging Face trainer numbers them);
 *   <li>the 256 single bytes, in GPT-2's order (so any text, in any script, can be encoded and
 *       decoded back exactly);
 *   <li>one token per merge, in the order the merges were learnt, until the vocabulary has {@code
 *       vocabSize} entries.
 * </ol>
 *
 * <p>Training, as in Hugging Face's {@code BpeTrainer}: special tokens are cut out of the text, the
 * rest is split with GPT-2's regex, and each pre-token's bytes become the initial symbols. The word
 * frequencies are counted once; then the most frequent adjacent pair (counted in every word,
 * weighted by the word's frequency) is merged, again and again. Pair counts are updated
 * incrementally (only the words that hold the merged pair are touched) and a priority queue with lazy
 * deletion finds the next best pair, so a 2,048-token vocabulary on a few MB of text takes a second
 * or two. Ties go to the pair whose left, then right, token has the smaller id, which makes training
 * fully deterministic. Training stops early, with fewer tokens than asked, when no pair occurs at
 * least {@code minFrequency} times any more ({@link TrainedTokenizer#vocabSize()} tells).
 *
 * <p>Typical use:
 *
 * <pre>{@code
 * TrainedTokenizer tok = ByteLevelBpeTrainer.train(corpusFile, 1024,
 *         List.of(ByteLevelBpeTrainer.END_OF_TEXT, ByteLevelBpeTrainer.PAD));
 * tok.save(modelDir);   // tokenizer.json, tokenizer_config.json, special_tokens_map.json
 * }</pre>
 */
public final class ByteLevelBpeTrainer {

    /** GPT-2's document separator; used as both BOS and EOS by default. */
    public static final String END_OF_TEXT = "<|endoftext|>";

    /** The padding token added by default. */
    public static final String PAD = "<pad>";

    /** The default special tokens: {@code <|endoftext|>} (id 0) and {@code <pad>} (id 1). */
    public static final List<String> DEFAULT_SPECIAL_TOKENS = List.of(END_OF_TEXT, PAD);

    /** Corpus files are pre-tokenized in pieces of about this many characters. */
    private static final int CHUNK_CHARS = 1 << 20;

    private final int vocabSize;
    private final List<String> specialTokens;
    private final String bosToken;
    private final String eosToken;
    private final String padToken;
    private final boolean addBosToken;
    private final int modelMaxLength;
    private final int minFrequency;

    private ByteLevelBpeTrainer(Builder b) {
        this.vocabSize = b.vocabSize;
        this.specialTokens = List.copyOf(b.specialTokens);
        this.bosToken = b.bosToken != null ? b.bosToken : defaultEndOfText(specialTokens);
        this.eosToken = b.eosToken != null ? b.eosToken : defaultEndOfText(specialTokens);
        this.padToken = b.padToken != null ? b.padToken : specialTokens.contains(PAD) ? PAD : null;
        this.addBosToken = b.addBosToken;
        this.modelMaxLength = b.modelMaxLength;
        this.minFrequency = b.minFrequency;
        if (new HashSet<>(specialTokens).size() != specialTokens.size()) {
            throw new IllegalArgumentException("duplicate special tokens: " + specialTokens);
        }
        for (String s : specialTokens) {
            if (s == null || s.isEmpty()) {
                throw new IllegalArgumentException("empty special token in " + specialTokens);
            }
        }
        for (String t : Arrays.asList(bosToken, eosToken, padToken)) {
            if (t != null && !specialTokens.contains(t)) {
                throw new IllegalArgumentException(
                        "bos/eos/pad token " + t + " is not among the special tokens " + specialTokens);
            }
        }
        if (addBosToken && bosToken == null) {
            throw new IllegalArgumentException("addBosToken needs a BOS token among the special tokens");
        }
        int min = specialTokens.size() + 256;
        if (vocabSize < min) {
            throw new IllegalArgumentException(
                    "vocabSize " + vocabSize + " is below the " + min
                            + " tokens that the special tokens and the 256 bytes take");
        }
        if (modelMaxLength < 1) {
            throw new IllegalArgumentException("modelMaxLength must be >= 1 but was " + modelMaxLength);
        }
        if (minFrequency < 1) {
            throw new IllegalArgumentException("minFrequency must be >= 1 but was " + minFrequency);
        }
    }

    private static String defaultEndOfText(List<String> specials) {
        if (specials.contains(END_OF_TEXT)) {
            return END_OF_TEXT;
        }
        return specials.isEmpty() ? null : specials.get(0);
    }

    /**
     * Starts a trainer configuration.
     *
     * @return a builder with the defaults: special tokens {@link #DEFAULT_SPECIAL_TOKENS}, BOS = EOS
     *     = {@code <|endoftext|>}, pad {@code <pad>}, BOS added by the post-processor, model max
     *     length 1024, min frequency 2; {@code vocabSize} must be set
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Trains on {@code texts}, each an independent document, with the default options.
     *
     * @param texts the training documents
     * @param vocabSize the wanted vocabulary size, special tokens and the 256 bytes included
     * @param specialTokens the special tokens, ids 0, 1, ... in this order; {@code <|endoftext|>}
     *     (or else the first one) becomes BOS and EOS, {@code <pad>} (when present) the pad token
     * @return the trained tokenizer
     */
    public static TrainedTokenizer train(Iterable<String> texts, int vocabSize, List<String> specialTokens) {
        return builder().vocabSize(vocabSize).specialTokens(specialTokens).build().train(texts);
    }

    /**
     * Trains on a UTF-8 text file with the default options.
     *
     * @param corpus the training text
     * @param vocabSize the wanted vocabulary size, special tokens and the 256 bytes included
     * @param specialTokens the special tokens (see {@link #train(Iterable, int, List)})
     * @return the trained tokenizer
     * @throws IOException if the file cannot be read
     */
    public static TrainedTokenizer train(Path corpus, int vocabSize, List<String> specialTokens)
            throws IOException {
        return builder().vocabSize(vocabSize).specialTokens(specialTokens).build().train(corpus);
    }

    /**
     * Trains on {@code texts}, each an independent document (pre-tokenization never spans two).
     *
     * @param texts the training documents
     * @return the trained tokenizer
     */
    public TrainedTokenizer train(Iterable<String> texts) {
        WordCounter counter = new WordCounter(specialTokens);
        for (String t : texts) {
            counter.add(t);
        }
        return learn(counter.counts);
    }

    /**
     * Trains on a UTF-8 text file. The file is read in pieces cut only where a line break sits
     * between two non-blank characters, which splits it into exactly the pre-tokens that reading it
     * whole would give.
     *
     * @param corpus the training text
     * @return the trained tokenizer
     * @throws IOException if the file cannot be read
     */
    public TrainedTokenizer train(Path corpus) throws IOException {
        return train(corpus, CHUNK_CHARS);
    }

    /** {@link #train(Path)} with pieces of about {@code chunkChars} characters. */
    TrainedTokenizer train(Path corpus, int chunkChars) throws IOException {
        WordCounter counter = new WordCounter(specialTokens);
        try (Reader r = Files.newBufferedReader(corpus, StandardCharsets.UTF_8)) {
            char[] buf = new char[Math.min(chunkChars, 1 << 16)];
            StringBuilder pending = new StringBuilder();
            // A special token with a line break in it could span a cut: then read the file whole.
            boolean chunked = specialTokens.stream().noneMatch(t -> t.indexOf('\n') >= 0);
            int n;
            int scanned = 0; // pending[0, scanned) holds no safe cut
            while ((n = r.read(buf)) != -1) {
                pending.append(buf, 0, n);
                if (chunked && pending.length() >= chunkChars) {
                    int cut = safeCut(pending, scanned);
                    if (cut > 0) {
                        counter.add(pending.substring(0, cut));
                        pending.delete(0, cut);
                        scanned = 0;
                    } else {
                        scanned = Math.max(0, pending.length() - 2);
                    }
                }
            }
            counter.add(pending.toString());
        }
        return learn(counter.counts);
    }

    /**
     * The last index {@code i} where {@code s[i-1]} is a '\n' between two characters that are not
     * white space, so that no pre-token spans it; 0 if there is none at or after {@code from}.
     */
    static int safeCut(CharSequence s, int from) {
        for (int i = s.length() - 1; i >= Math.max(2, from); i--) {
            if (s.charAt(i - 1) == '\n' && isSolid(s.charAt(i)) && isSolid(s.charAt(i - 2))) {
                return i;
            }
        }
        return 0;
    }

    /** Visible ASCII, or a letter or digit: certainly not white space for any definition of it. */
    private static boolean isSolid(char c) {
        return (c > ' ' && c < 0x7F) || Character.isLetterOrDigit(c);
    }

    /** Counts pre-token frequencies, skipping the special tokens. */
    private static final class WordCounter {
        final Map<String, long[]> counts = new HashMap<>();
        private final Pattern specials;

        WordCounter(List<String> specialTokens) {
            if (specialTokens.isEmpty()) {
                specials = null;
            } else {
                // Longest first, so that a special token that contains another one wins.
                List<String> sorted = new ArrayList<>(specialTokens);
                sorted.sort((a, b) -> b.length() - a.length());
                StringBuilder re = new StringBuilder();
                for (String s : sorted) {
                    if (re.length() > 0) {
                        re.append('|');
                    }
                    re.append(Pattern.quote(s));
                }
                specials = Pattern.compile(re.toString());
            }
        }

        void add(String text) {
            if (specials == null) {
                addPiece(text);
                return;
            }
            Matcher m = specials.matcher(text);
            int start = 0;
            while (m.find()) {
                addPiece(text.substring(start, m.start()));
                start = m.end();
            }
            addPiece(text.substring(start));
        }

        private void addPiece(String piece) {
            if (piece.isEmpty()) {
                return;
            }
            Matcher m = ByteLevel.SPLIT.matcher(piece);
            while (m.find()) {
                counts.computeIfAbsent(m.group(), k -> new long[1])[0]++;
            }
        }
    }

    // ------------------------------------------------------------------------------------------
    // BPE merges
    // ------------------------------------------------------------------------------------------

    /** A candidate merge as queued: the pair and its count when it was queued. */
    private record Candidate(long count, int left, int right) {}

    private static long key(int left, int right) {
        return ((long) left << 32) | (right & 0xFFFFFFFFL);
    }

    private TrainedTokenizer learn(Map<String, long[]> wordCounts) {
        // Vocabulary: special tokens, then the byte alphabet.
        List<String> idToToken = new ArrayList<>(vocabSize);
        Map<String, Integer> tokenToId = new HashMap<>();
        for (String s : specialTokens) {
            tokenToId.put(s, idToToken.size());
            idToToken.add(s);
        }
        int firstByteId = idToToken.size();
        for (int i = 0; i < 256; i++) {
            String t = String.valueOf(ByteLevelAlphabet.charOf(ByteLevelAlphabet.byteAt(i)));
            if (tokenToId.putIfAbsent(t, idToToken.size()) != null) {
                throw new IllegalArgumentException("special token " + t + " collides with a byte token");
            }
            idToToken.add(t);
        }

        // Words, in a fixed order (sorted), as arrays of symbol ids.
        TreeMap<String, long[]> sorted = new TreeMap<>(wordCounts);
        int numWords = sorted.size();
        int[][] words = new int[numWords][];
        long[] freq = new long[numWords];
        int w = 0;
        for (Map.Entry<String, long[]> e : sorted.entrySet()) {
            byte[] bytes = e.getKey().getBytes(StandardCharsets.UTF_8);
            int[] sym = new int[bytes.length];
            for (int i = 0; i < bytes.length; i++) {
                sym[i] = firstByteId + ByteLevelAlphabet.rankOf(bytes[i] & 0xFF);
            }
            words[w] = sym;
            freq[w] = e.getValue()[0];
            w++;
        }

        // Initial pair counts and where each pair occurs.
        Map<Long, long[]> pairCounts = new HashMap<>();
        Map<Long, Set<Integer>> where = new HashMap<>();
        for (int i = 0; i < numWords; i++) {
            int[] sym = words[i];
            for (int j = 0; j + 1 < sym.length; j++) {
                long k = key(sym[j], sym[j + 1]);
                pairCounts.computeIfAbsent(k, x -> new long[1])[0] += freq[i];
                where.computeIfAbsent(k, x -> new HashSet<>()).add(i);
            }
        }
        PriorityQueue<Candidate> queue =
                new PriorityQueue<>(
                        Math.max(16, pairCounts.size()),
                        (a, b) -> {
                            if (a.count != b.count) {
                                return Long.compare(b.count, a.count);
                            }
                            if (a.left != b.left) {
                                return Integer.compare(a.left, b.left);
                            }
                            return Integer.compare(a.right, b.right);
                        });
        for (Map.Entry<Long, long[]> e : pairCounts.entrySet()) {
            long k = e.getKey();
            queue.add(new Candidate(e.getValue()[0], (int) (k >>> 32), (int) k));
        }

        List<String> merges = new ArrayList<>();
        Map<Long, long[]> delta = new HashMap<>();
        while (idToToken.size() < vocabSize && !queue.isEmpty()) {
            Candidate top = queue.poll();
            long k = key(top.left, top.right);
            long[] current = pairCounts.get(k);
            if (current == null || current[0] != top.count) {
                continue; // stale entry: the count changed since it was queued
            }
            if (top.count < minFrequency) {
                break;
            }
            String a = idToToken.get(top.left);
            String b = idToToken.get(top.right);
            String merged = a + b;
            Integer newId = tokenToId.get(merged);
            if (newId == null) {
                newId = idToToken.size();
                idToToken.add(merged);
                tokenToId.put(merged, newId);
            }
            merges.add(a + " " + b);

            // Rewrite every word that holds the pair, collecting the change of every pair count.
            delta.clear();
            Set<Integer> holders = where.remove(k);
            List<Integer> ordered = new ArrayList<>(holders);
            ordered.sort(null);
            for (int wi : ordered) {
                int[] sym = words[wi];
                int[] out = mergeWord(sym, top.left, top.right, newId);
                if (out == sym) {
                    continue; // the index was stale: the pair left this word earlier
                }
                long f = freq[wi];
                for (int j = 0; j + 1 < sym.length; j++) {
                    delta.computeIfAbsent(key(sym[j], sym[j + 1]), x -> new long[1])[0] -= f;
                }
                for (int j = 0; j + 1 < out.length; j++) {
                    long nk = key(out[j], out[j + 1]);
                    delta.computeIfAbsent(nk, x -> new long[1])[0] += f;
                    if (out[j] == newId || out[j + 1] == newId) {
                        where.computeIfAbsent(nk, x -> new HashSet<>()).add(wi);
                    }
                }
                words[wi] = out;
            }
            for (Map.Entry<Long, long[]> e : delta.entrySet()) {
                long d = e.getValue()[0];
                if (d == 0) {
                    continue;
                }
                long pk = e.getKey();
                long[] c = pairCounts.computeIfAbsent(pk, x -> new long[1]);
                c[0] += d;
                if (c[0] <= 0) {
                    pairCounts.remove(pk);
                } else {
                    queue.add(new Candidate(c[0], (int) (pk >>> 32), (int) pk));
                }
            }
            pairCounts.remove(k);
        }

        Map<String, Integer> vocab = new LinkedHashMap<>();
        for (int i = 0; i < idToToken.size(); i++) {
            vocab.put(idToToken.get(i), i);
        }
        return new TrainedTokenizer(
                vocab, merges, specialTokens, bosToken, eosToken, padToken, addBosToken, modelMaxLength);
    }

    /**
     * Replaces every occurrence of {@code (left, right)} in {@code sym}, left to right, by {@code
     * id}; returns {@code sym} itself when there is none.
     */
    private static int[] mergeWord(int[] sym, int left, int right, int id) {
        int[] out = null;
        int n = 0;
        for (int j = 0; j < sym.length; j++) {
            if (j + 1 < sym.length && sym[j] == left && sym[j + 1] == right) {
                if (out == null) {
                    out = new int[sym.length - 1];
                    System.arraycopy(sym, 0, out, 0, j);
                    n = j;
                }
                out[n++] = id;
                j++;
            } else if (out != null) {
                out[n++] = sym[j];
            }
        }
        return out == null ? sym : Arrays.copyOf(out, n);
    }

    /** Options of a {@link ByteLevelBpeTrainer}. */
    public static final class Builder {
        private int vocabSize = -1;
        private List<String> specialTokens = DEFAULT_SPECIAL_TOKENS;
        private String bosToken;
        private String eosToken;
        private String padToken;
        private boolean addBosToken = true;
        private int modelMaxLength = 1024;
        private int minFrequency = 2;

        private Builder() {}

        /**
         * Sets the vocabulary size, special tokens and the 256 bytes included (required).
         *
         * @param vocabSize at least the number of special tokens + 256
         * @return this builder
         */
        public Builder vocabSize(int vocabSize) {
            this.vocabSize = vocabSize;
            return this;
        }

        /**
         * Sets the special tokens; they get ids 0, 1, ... in this order.
         *
         * @param specialTokens the special tokens (default {@link #DEFAULT_SPECIAL_TOKENS})
         * @return this builder
         */
        public Builder specialTokens(List<String> specialTokens) {
            this.specialTokens = List.copyOf(Objects.requireNonNull(specialTokens, "specialTokens"));
            return this;
        }

        /**
         * Sets the BOS token (default {@code <|endoftext|>}, or else the first special token).
         *
         * @param bosToken one of the special tokens
         * @return this builder
         */
        public Builder bosToken(String bosToken) {
            this.bosToken = bosToken;
            return this;
        }

        /**
         * Sets the EOS token (default {@code <|endoftext|>}, or else the first special token).
         *
         * @param eosToken one of the special tokens
         * @return this builder
         */
        public Builder eosToken(String eosToken) {
            this.eosToken = eosToken;
            return this;
        }

        /**
         * Sets the padding token (default {@code <pad>} when it is a special token, else none).
         *
         * @param padToken one of the special tokens
         * @return this builder
         */
        public Builder padToken(String padToken) {
            this.padToken = padToken;
            return this;
        }

        /**
         * Whether encoding with special tokens puts the BOS token in front (default {@code true}).
         * When true, the post-processor is {@code Sequence[ByteLevel, TemplateProcessing]} (as in
         * Llama 3's tokenizer.json); when false it is GPT-2's plain {@code ByteLevel}, which adds
         * nothing.
         *
         * @param addBosToken whether to add BOS
         * @return this builder
         */
        public Builder addBosToken(boolean addBosToken) {
            this.addBosToken = addBosToken;
            return this;
        }

        /**
         * Sets {@code model_max_length} of {@code tokenizer_config.json} (default 1024).
         *
         * @param modelMaxLength the model's context length in tokens
         * @return this builder
         */
        public Builder modelMaxLength(int modelMaxLength) {
            this.modelMaxLength = modelMaxLength;
            return this;
        }

        /**
         * Sets how often a pair must occur to be merged (default 2, as Hugging Face's {@code
         * ByteLevelBPETokenizer.train}).
         *
         * @param minFrequency at least 1
         * @return this builder
         */
        public Builder minFrequency(int minFrequency) {
            this.minFrequency = minFrequency;
            return this;
        }

        /**
         * Checks the options and creates the trainer.
         *
         * @return the trainer
         */
        public ByteLevelBpeTrainer build() {
            if (vocabSize < 0) {
                throw new IllegalStateException("vocabSize must be set");
            }
            return new ByteLevelBpeTrainer(this);
        }
    }
}
