package io.github.djlllmzoo.translators;

import java.util.ArrayList;
import java.util.List;

/**
 * The processors a {@link GenerationConfig} asks for, in Hugging Face's order: repetition penalty
 * and OpenAI's logit bias, presence and frequency penalties (greedy and sampling, on the model's
 * logits as OpenAI applies them), then for sampling temperature, top-k, top-p and min-p.
 * Processors that would change nothing (penalty 1, temperature 1, top-k 0, top-p 1, min-p 0, no
 * bias, penalties 0) are left out.
 */
public final class LogitsProcessorChain implements LogitsProcessor {

    private final List<LogitsProcessor> processors;

    /** @param processors the processors, applied in order */
    public LogitsProcessorChain(List<LogitsProcessor> processors) {
        this.processors = List.copyOf(processors);
    }

    /**
     * The chain of a config for prompts of no tokens counted apart (presence and frequency
     * penalties count the whole context).
     *
     * @param config the config
     * @return its processors
     */
    public static LogitsProcessorChain forConfig(GenerationConfig config) {
        return forConfig(config, 0);
    }

    /**
     * The chain of a config for a prompt of a given length.
     *
     * @param config the config
     * @param promptLength the prompt's tokens, which presence and frequency penalties do not count
     * @return its processors
     */
    public static LogitsProcessorChain forConfig(GenerationConfig config, int promptLength) {
        List<LogitsProcessor> out = new ArrayList<>();
        if (config.repetitionPenalty() != 1f) {
            out.add(new RepetitionPenaltyProcessor(config.repetitionPenalty()));
        }
        LogitAdjustments adjustments = config.logitAdjustments();
        if (!adjustments.logitBias().isEmpty()) {
            out.add(new LogitBiasProcessor(adjustments.logitBias()));
        }
        if (adjustments.presencePenalty() != 0f || adjustments.frequencyPenalty() != 0f) {
            out.add(
                    new OccurrencePenaltyProcessor(
                            adjustments.presencePenalty(),
                            adjustments.frequencyPenalty(),
                            promptLength));
        }
        if (!config.isGreedy()) {
            if (config.temperature() != 1f) {
                out.add(new TemperatureProcessor(config.temperature()));
            }
            if (config.topK() > 0) {
                out.add(new TopKProcessor(config.topK()));
            }
            if (config.topP() < 1f) {
                out.add(new TopPProcessor(config.topP()));
            }
            if (config.minP() > 0f) {
                out.add(new MinPProcessor(config.minP()));
            }
        }
        return new LogitsProcessorChain(out);
    }

    /** @return the processors, in order */
    public List<LogitsProcessor> processors() {
        return processors;
    }

    /** @return whether the chain changes nothing */
    public boolean isEmpty() {
        return processors.isEmpty();
    }

    @Override
    public void process(long[] context, int length, float[] logits) {
        for (LogitsProcessor processor : processors) {
            processor.process(context, length, logits);
        }
    }
}
