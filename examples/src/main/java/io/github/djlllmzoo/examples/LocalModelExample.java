package io.github.djlllmzoo.examples;

import io.github.djlllmzoo.translators.GeneratedSequence;
import io.github.djlllmzoo.translators.GenerationConfig;
import io.github.djlllmzoo.zoo.LocalModel;
import java.nio.file.Path;

/**
 * Generation straight on a checkpoint directory, without the model zoo: {@link LocalModel} holds
 * the model, its tokenizer and a generator over its KV cache.
 *
 * <p>Run as {@code LocalModelExample DIR [PROMPT]}; it prints the greedy continuation of at most 20
 * tokens, stopping at the checkpoint's end-of-sequence token.
 */
public final class LocalModelExample {

    private LocalModelExample() {}

    /**
     * Loads the checkpoint and prints one continuation.
     *
     * @param args {@code DIR [PROMPT]}
     * @throws Exception if the checkpoint cannot be loaded or run
     */
    public static void main(String[] args) throws Exception {
        if (args.length < 1 || args.length > 2) {
            throw new IllegalArgumentException("usage: LocalModelExample DIR [PROMPT]");
        }
        String text = args.length == 2 ? args[1] : "Once upon a time";
        try (LocalModel model = LocalModel.load(Path.of(args[0]))) {
            long[] prompt = model.tokenizer().encode(text);
            GenerationConfig config =
                    GenerationConfig.builder().maxNewTokens(20).eosTokenIds(model.eosTokenIds()).build();
            GeneratedSequence out = model.generator().generateGreedy(prompt, config);
            System.out.println(model.tokenizer().decodeContinuation(prompt, out.tokenIds()));
        }
    }
}
