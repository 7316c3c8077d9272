package io.github.djlllmzoo.examples;

import io.github.djlllmzoo.training.FineTuneResult;
import io.github.djlllmzoo.training.FineTuneSettings;
import io.github.djlllmzoo.training.FineTuner;
import io.github.djlllmzoo.training.HeldOutSplit;
import io.github.djlllmzoo.training.PackedTextDataset;
import io.github.djlllmzoo.zoo.LocalModel;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;

/**
 * Fine-tuning from Java, the pipeline {@code llmzoo finetune} runs: the text file is tokenized and
 * packed into fixed-length records, a twentieth is held out, {@link FineTuner} trains with AdamW
 * and writes a complete checkpoint (weights, config, tokenizer) that loads like any other.
 *
 * <p>Run as {@code FineTuningExample DIR TEXT_FILE OUT_DIR [STEPS]}; it prints the held-out
 * perplexity before and after training.
 */
public final class FineTuningExample {

    /** Tokens per training record. */
    private static final int SEQUENCE_LENGTH = 64;

    private FineTuningExample() {}

    /**
     * Fine-tunes the checkpoint on the text and saves the result.
     *
     * @param args {@code DIR TEXT_FILE OUT_DIR [STEPS]}
     * @throws Exception if the checkpoint or the text cannot be read, or the result written
     */
    public static void main(String[] args) throws Exception {
        if (args.length < 3 || args.length > 4) {
            throw new IllegalArgumentException("usage: FineTuningExample DIR TEXT_FILE OUT_DIR [STEPS]");
        }
        Path out = Path.of(args[2]);
        int steps = args.length == 4 ? Integer.parseInt(args[3]) : 100;
        try (LocalModel model = LocalModel.load(Path.of(args[0]))) {
            int[] tokens =
                    PackedTextDataset.tokenizeFiles(
                            model.tokenizer(), List.of(Path.of(args[1])), model.eosTokenIds().get(0));
            PackedTextDataset text =
                    PackedTextDataset.builder().setTokens(tokens).setSequenceLength(SEQUENCE_LENGTH).build();
            HeldOutSplit split = HeldOutSplit.of(text, 0.05);
            FineTuneResult result =
                    FineTuner.builder()
                            .setModel(model.model())
                            .setTrainData(split.train())
                            .optEvalData(split.eval())
                            .optSettings(
                                    FineTuneSettings.builder()
                                            .steps(steps)
                                            .sequenceLength(SEQUENCE_LENGTH)
                                            .learningRate(1e-3f)
                                            .build())
                            .optCheckpoints(out, model.dir())
                            .optProgress(new PrintWriter(System.err, true))
                            .build()
                            .run();
            System.out.printf(
                    Locale.ROOT,
                    "held-out perplexity %.4f -> %.4f after %d steps; saved %s%n",
                    result.initialEval().value(),
                    result.finalEval().value(),
                    result.finalStep(),
                    out);
        }
    }
}
