package io.github.djlllmzoo.defaultmodel;

import io.github.djlllmzoo.constrained.ByteLevelAlphabet;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Splits text into the tokens of a {@link TrainedTokenizer} the way the Hugging Face BPE model
 * does with its vocabulary (special tokens kept whole, no BOS added): a slow, plain reference to
 * check the learnt merges and the Hugging Face encoding against.
 */
final class ReferenceBpeEncoder {

    private final TrainedTokenizer tokenizer;
    private final Map<String, Integer> mergeRanks = new HashMap<>();
    private final Pattern specialsPattern;

    ReferenceBpeEncoder(TrainedTokenizer tokenizer) {
        this.tokenizer = tokenizer;
        List<String> merges = tokenizer.merges();
        for (int i = 0; i < merges.size(); i++) {
            mergeRanks.putIfAbsent(merges.get(i), i);
        }
        List<String> sorted = new ArrayList<>(tokenizer.specialTokens());
        sorted.sort((a, b) -> b.length() - a.length());
        StringBuilder re = new StringBuilder();
        for (String s : sorted) {
            re.append(re.length() > 0 ? "|" : "").append(Pattern.quote(s));
        }
        specialsPattern = sorted.isEmpty() ? null : Pattern.compile(re.toString());
    }

    /** The tokens of {@code text}, in byte-level characters. */
    List<String> tokenize(String text) {
        List<String> out = new ArrayList<>();
        int start = 0;
        if (specialsPattern != null) {
            Matcher m = specialsPattern.matcher(text);
            while (m.find()) {
                tokenizePiece(text.substring(start, m.start()), out);
                out.add(m.group());
                start = m.end();
            }
        }
        tokenizePiece(text.substring(start), out);
        return out;
    }

    private void tokenizePiece(String piece, List<String> out) {
        Matcher words = ByteLevel.SPLIT.matcher(piece);
        while (words.find()) {
            String chars = byteLevelChars(words.group());
            List<String> sym = new ArrayList<>(chars.length());
            for (int i = 0; i < chars.length(); i++) {
                sym.add(String.valueOf(chars.charAt(i)));
            }
            while (sym.size() > 1) {
                int best = -1;
                int bestRank = Integer.MAX_VALUE;
                for (int i = 0; i + 1 < sym.size(); i++) {
                    Integer r = mergeRanks.get(sym.get(i) + " " + sym.get(i + 1));
                    if (r != null && r < bestRank) {
                        bestRank = r;
                        best = i;
                    }
                }
                if (best < 0) {
                    break;
                }
                sym.set(best, sym.get(best) + sym.get(best + 1));
                sym.remove(best + 1);
            }
            out.addAll(sym);
        }
    }

    /** Maps the UTF-8 bytes of {@code s} to their byte-level characters. */
    private static String byteLevelChars(String s) {
        byte[] bytes = s.getBytes(StandardCharsets.UTF_8);
        char[] chars = new char[bytes.length];
        for (int i = 0; i < bytes.length; i++) {
            chars[i] = ByteLevelAlphabet.charOf(bytes[i] & 0xFF);
        }
        return new String(chars);
    }

    /** Ids of {@link #tokenize(String)}. */
    int[] encode(String text) {
        List<String> tokens = tokenize(text);
        int[] ids = new int[tokens.size()];
        for (int i = 0; i < ids.length; i++) {
            ids[i] = tokenizer.tokenId(tokens.get(i));
        }
        return ids;
    }
}
