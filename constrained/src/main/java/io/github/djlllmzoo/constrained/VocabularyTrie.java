package io.github.djlllmzoo.constrained;

import java.util.Arrays;
import java.util.BitSet;

/**
 * The non-atomic tokens of a vocabulary as a byte trie in flat arrays, so the tokens a grammar
 * state allows are found in one walk that shares every common prefix (a state that rejects a byte
 * skips every token under it).
 */
final class VocabularyTrie {

    /** Node {@code n}'s children are {@code childByte/childNode[childStart[n] .. childStart[n + 1])}. */
    final int[] childStart;
    final byte[] childByte;
    final int[] childNode;
    /** The tokens whose bytes end at node {@code n}: {@code tokenIds[tokenStart[n] .. tokenStart[n + 1])}. */
    final int[] tokenStart;
    final int[] tokenIds;

    private final Grammar.IntList childStartList = new Grammar.IntList();
    private final Grammar.IntList tokenStartList = new Grammar.IntList();
    private int[] childBytes = new int[1024];
    private int[] childNodes = new int[1024];
    private int childCount;
    private int[] ids = new int[1024];
    private int idCount;

    VocabularyTrie(byte[][] tokens, BitSet atomic) {
        Integer[] order =
                java.util.stream.IntStream.range(0, tokens.length)
                        .filter(i -> !atomic.get(i) && tokens[i].length > 0)
                        .boxed()
                        .toArray(Integer[]::new);
        Arrays.sort(order, (a, b) -> Arrays.compareUnsigned(tokens[a], tokens[b]));
        int[] sorted = Arrays.stream(order).mapToInt(Integer::intValue).toArray();
        // Nodes are numbered in the order they are made; children's ranges are filled in after.
        int nodes = countNodes(tokens, sorted);
        int[] start = new int[nodes + 1];
        int[] tStart = new int[nodes + 1];
        byte[] cb = new byte[nodes];
        int[] cn = new int[nodes];
        int[] tid = new int[sorted.length];
        int[] counter = {1, 0, 0}; // next node id, next child slot, next token slot
        build(tokens, sorted, 0, sorted.length, 0, 0, start, tStart, cb, cn, tid, counter);
        start[nodes] = counter[1];
        tStart[nodes] = counter[2];
        this.childStart = start;
        this.childByte = cb;
        this.childNode = cn;
        this.tokenStart = tStart;
        this.tokenIds = tid;
    }

    int nodeCount() {
        return childStart.length - 1;
    }

    private static int countNodes(byte[][] tokens, int[] sorted) {
        int nodes = 1;
        for (int i = 0; i < sorted.length; i++) {
            byte[] t = tokens[sorted[i]];
            int common = 0;
            if (i > 0) {
                byte[] p = tokens[sorted[i - 1]];
                int m = Arrays.mismatch(p, t);
                common = m < 0 ? t.length : m;
            }
            nodes += t.length - common;
        }
        return nodes;
    }

    /**
     * Fills node {@code node} from the tokens {@code sorted[from..to)}, which share their first
     * {@code depth} bytes; its children get consecutive child slots, then are built in turn.
     */
    private static void build(
            byte[][] tokens, int[] sorted, int from, int to, int depth, int node,
            int[] start, int[] tStart, byte[] cb, int[] cn, int[] tid, int[] counter) {
        tStart[node] = counter[2];
        int i = from;
        while (i < to && tokens[sorted[i]].length == depth) {
            tid[counter[2]++] = sorted[i++];
        }
        start[node] = counter[1];
        // First pass: one child slot per distinct next byte (nodes numbered depth-first later).
        int groupsFrom = i;
        int slots = 0;
        for (int j = i; j < to; ) {
            byte b = tokens[sorted[j]][depth];
            int k = j;
            while (k < to && tokens[sorted[k]][depth] == b) {
                k++;
            }
            slots++;
            j = k;
        }
        int slot = counter[1];
        counter[1] += slots;
        for (int j = groupsFrom; j < to; ) {
            byte b = tokens[sorted[j]][depth];
            int k = j;
            while (k < to && tokens[sorted[k]][depth] == b) {
                k++;
            }
            int child = counter[0]++;
            cb[slot] = b;
            cn[slot] = child;
            slot++;
            build(tokens, sorted, j, k, depth + 1, child, start, tStart, cb, cn, tid, counter);
            j = k;
        }
    }
}
