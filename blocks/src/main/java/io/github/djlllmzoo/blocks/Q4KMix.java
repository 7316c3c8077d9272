package io.github.djlllmzoo.blocks;

/**
 * Which weights {@link WeightFormat#Q4_K} holds in a finer format, as llama.cpp's Q4_K_M mix does
 * ({@code llama_tensor_get_type}): the LM head (the token embedding where the head is tied to it), and
 * the value projection and the MLP's down projection of the layers llama.cpp's {@code use_more_bits}
 * picks (the first and last eighth of the layers and every third between), which Q4_K_M stores in
 * Q6_K (6.56 bits a weight), are held in {@link WeightFormat#INT6} (6.5 bits a weight: a float16
 * scale per 32 weights; int8's 8.5 bits held a 1.1B model's 186 M such weights in 44 MiB more); every
 * other weight in Q4_K. Pure Q4_K everywhere moved the mean |log-probability| per token 11% more than
 * Q4_K_M on the same random weights (docs/gguf.md, "--dtype q4_k").
 */
public final class Q4KMix {

    private Q4KMix() {}

    /**
     * The format one weight is held in when {@code q4_k} is asked.
     *
     * @param name the parameter's name in the block ({@code layers.3.self_attn.v_proj.weight})
     * @param head whether it is the LM head, or the token embedding the head is tied to
     * @param layers the model's layer count
     * @return {@link WeightFormat#INT6} or {@link WeightFormat#Q4_K}
     */
    public static WeightFormat formatOf(String name, boolean head, int layers) {
        if (head) {
            return WeightFormat.INT6;
        }
        boolean moreBits = name.contains("v_proj.") || name.contains("down_proj.");
        int layer = layerOf(name);
        return moreBits && layer >= 0 && moreBits(layer, layers) ? WeightFormat.INT6 : WeightFormat.Q4_K;
    }

    /** llama.cpp's {@code use_more_bits}: the first and last eighth of the layers and every third between. */
    static boolean moreBits(int layer, int layers) {
        return layer < layers / 8 || layer >= 7 * layers / 8 || (layer - layers / 8) % 3 == 2;
    }

    /** The index after {@code layers.} (or GPT-2's {@code h.}) in a parameter name, or -1. */
    private static int layerOf(String name) {
        String[] parts = name.split("\\.");
        for (int i = 0; i + 1 < parts.length; i++) {
            if ((parts[i].equals("layers") || parts[i].equals("h")) && parts[i + 1].chars().allMatch(Character::isDigit)) {
                return Integer.parseInt(parts[i + 1]);
            }
        }
        return -1;
    }
}
