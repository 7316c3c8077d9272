package io.github.djlllmzoo.training;

import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.dataset.BatchSampler;
import ai.djl.training.dataset.RandomAccessDataset;
import ai.djl.training.dataset.Record;
import ai.djl.training.dataset.SequenceSampler;
import ai.djl.translate.PaddingStackBatchifier;
import ai.djl.util.Progress;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParseException;
import com.google.gson.JsonParser;
import io.github.djlllmzoo.translators.TextTokenizer;
import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Prompt/completion pairs for supervised fine-tuning, where only the completion is learned. Each
 * example is {@code prompt + completion} (the completion ending with EOS when the reader adds it),
 * cut to {@code T + 1} tokens. Record data is {@code [input_ids (L)]} = all tokens but the last;
 * labels are {@code [targets (L)]} = the next token at each position, with {@link
 * CausalLmLoss#IGNORE_INDEX} wherever the next token still belongs to the prompt. Batches are padded
 * to their longest example: inputs with the pad token, targets with {@link
 * CausalLmLoss#IGNORE_INDEX}, so padding never counts and, being on the right of a causal model,
 * never changes the real positions.
 */
public final class PromptCompletionDataset extends RandomAccessDataset {

    /** The JSONL field holding the prompt. */
    public static final String PROMPT_FIELD = "prompt";
    /** The JSONL field holding the completion. */
    public static final String COMPLETION_FIELD = "completion";

    private final List<Example> examples;
    private final int dropped;

    private PromptCompletionDataset(Builder builder, List<Example> examples, int dropped) {
        super(builder);
        this.examples = examples;
        this.dropped = dropped;
    }

    /** @return a builder */
    public static Builder builder() {
        return new Builder();
    }

    /** @return how many examples were dropped because no completion token fit the window */
    public int droppedExamples() {
        return dropped;
    }

    /** @return the largest token id of any kept example, or -1 when there is none */
    public int maxTokenId() {
        long max = -1;
        for (Example e : examples) {
            for (long id : e.ids) {
                max = Math.max(max, id);
            }
        }
        return Math.toIntExact(max);
    }

    /** @return the number of completion tokens the loss counts, over all examples */
    public long countedTokens() {
        long count = 0;
        for (Example e : examples) {
            count += e.ids.length - e.promptLength;
        }
        return count;
    }

    @Override
    public Record get(NDManager manager, long index) {
        Example example = examples.get(Math.toIntExact(index));
        int length = example.ids.length - 1;
        long[] input = Arrays.copyOf(example.ids, length);
        long[] targets = new long[length];
        for (int t = 0; t < length; t++) {
            targets[t] = t + 1 >= example.promptLength ? example.ids[t + 1] : CausalLmLoss.IGNORE_INDEX;
        }
        return new Record(
                new NDList(manager.create(input, new Shape(length))),
                new NDList(manager.create(targets, new Shape(length))));
    }

    @Override
    protected long availableSize() {
        return examples.size();
    }

    @Override
    public void prepare(Progress progress) {}

    /** One tokenized example: the ids and how many of them are prompt. */
    private record Example(long[] ids, int promptLength) {}

    /** Builds a {@link PromptCompletionDataset}; sampling defaults to sequential batches of 1. */
    public static final class Builder extends BaseBuilder<Builder> {

        private final List<long[]> prompts = new ArrayList<>();
        private final List<long[]> completions = new ArrayList<>();
        private final List<String> sources = new ArrayList<>();
        private int sequenceLength;
        private long padTokenId;
        private int vocabularySize;

        private Builder() {
            setSampling(new BatchSampler(new SequenceSampler(), 1, false));
        }

        @Override
        protected Builder self() {
            return this;
        }

        /**
         * @param sequenceLength the most input tokens per record ({@code T}); longer examples are
         *     cut at {@code T + 1} tokens
         * @return this builder
         */
        public Builder setSequenceLength(int sequenceLength) {
            this.sequenceLength = sequenceLength;
            return this;
        }

        /**
         * @param padTokenId the id that pads inputs to the longest example of a batch (any valid
         *     id: padded positions never count and come after every real one)
         * @return this builder
         */
        public Builder optPadTokenId(long padTokenId) {
            this.padTokenId = padTokenId;
            return this;
        }

        /**
         * @param vocabularySize the model's vocabulary size ({@code vocab_size} of its config.json):
         *     {@link #build()} rejects any prompt, completion or pad id not below it, and {@link
         *     #addJsonl} an end-of-sequence id not below it
         * @return this builder
         * @throws IllegalArgumentException if the size is not positive
         */
        public Builder optVocabularySize(int vocabularySize) {
            this.vocabularySize = TokenIdOutOfRangeException.requireVocabularySize(vocabularySize);
            return this;
        }

        /**
         * Adds one tokenized example.
         *
         * @param prompt the prompt ids (not learned)
         * @param completion the completion ids (learned), including any EOS to learn
         * @return this builder
         */
        public Builder addExample(long[] prompt, long[] completion) {
            return add(prompt, completion, "example " + (prompts.size() + 1));
        }

        private Builder add(long[] prompt, long[] completion, String source) {
            prompts.add(prompt.clone());
            completions.add(completion.clone());
            sources.add(source);
            return this;
        }

        /**
         * Reads a JSONL file: one JSON object per non-blank line with string fields {@code prompt}
         * and {@code completion}. The prompt is encoded with the tokenizer's special tokens (e.g.
         * Llama's BOS), the completion without, followed by {@code eosTokenId}.
         *
         * @param file the JSONL file
         * @param tokenizer the model's tokenizer
         * @param eosTokenId the id to append to every completion ({@code
         *     LocalModel.documentSeparatorId()}), or a negative value for none
         * @return this builder
         * @throws IOException if the file cannot be read
         * @throws InvalidTrainingDataException naming the file and line of a malformed example
         * @throws TokenIdOutOfRangeException if {@code eosTokenId} is not below the vocabulary size
         *     ({@link #optVocabularySize}, else the tokenizer's)
         */
        public Builder addJsonl(Path file, TextTokenizer tokenizer, long eosTokenId)
                throws IOException {
            if (eosTokenId >= 0) {
                TokenIdOutOfRangeException.check(
                        file + ": the end-of-sequence id argument",
                        eosTokenId,
                        vocabularySize > 0 ? vocabularySize : tokenizer.vocabularySize());
            }
            try (BufferedReader reader = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
                String line;
                int number = 0;
                while ((line = reader.readLine()) != null) {
                    number++;
                    if (line.isBlank()) {
                        continue;
                    }
                    JsonObject json = parse(file, number, line);
                    long[] prompt = tokenizer.encode(field(file, number, json, PROMPT_FIELD));
                    long[] text =
                            tokenizer
                                    .huggingFaceTokenizer()
                                    .encode(field(file, number, json, COMPLETION_FIELD), false, false)
                                    .getIds();
                    long[] completion = eosTokenId >= 0 ? Arrays.copyOf(text, text.length + 1) : text;
                    if (eosTokenId >= 0) {
                        completion[text.length] = eosTokenId;
                    }
                    add(prompt, completion, file + ":" + number);
                }
            } catch (CharacterCodingException e) {
                throw new InvalidTrainingDataException(file, 0, "not valid UTF-8 text", e);
            }
            return this;
        }

        private static JsonObject parse(Path file, int line, String text)
                throws InvalidTrainingDataException {
            JsonElement element;
            try {
                element = JsonParser.parseString(text);
            } catch (JsonParseException e) {
                throw new InvalidTrainingDataException(file, line, "not valid JSON: " + e.getMessage(), e);
            }
            if (!element.isJsonObject()) {
                throw new InvalidTrainingDataException(
                        file, line, "expected a JSON object with \"prompt\" and \"completion\"");
            }
            return element.getAsJsonObject();
        }

        private static String field(Path file, int line, JsonObject json, String name)
                throws InvalidTrainingDataException {
            JsonElement value = json.get(name);
            if (value == null || value.isJsonNull()) {
                throw new InvalidTrainingDataException(file, line, "missing field \"" + name + "\"");
            }
            if (!value.isJsonPrimitive() || !value.getAsJsonPrimitive().isString()) {
                throw new InvalidTrainingDataException(
                        file, line, "field \"" + name + "\" must be a string, found " + value);
            }
            return value.getAsString();
        }

        /**
         * Cuts every example to {@code T + 1} tokens and drops those where no completion token
         * remains.
         *
         * @return the dataset
         * @throws IllegalArgumentException if the sequence length is not positive
         * @throws TokenIdOutOfRangeException if a vocabulary size is set and an example's id or
         *     the pad id is outside it, naming the example (file and line for JSONL)
         */
        public PromptCompletionDataset build() {
            if (sequenceLength < 1) {
                throw new IllegalArgumentException(
                        "sequence length must be at least 1, got " + sequenceLength);
            }
            if (vocabularySize > 0) {
                TokenIdOutOfRangeException.check("the pad token id argument", padTokenId, vocabularySize);
                for (int i = 0; i < prompts.size(); i++) {
                    TokenIdOutOfRangeException.check(sources.get(i) + " (prompt)", prompts.get(i), vocabularySize);
                    TokenIdOutOfRangeException.check(
                            sources.get(i) + " (completion)", completions.get(i), vocabularySize);
                }
            }
            List<Example> kept = new ArrayList<>();
            int dropped = 0;
            for (int i = 0; i < prompts.size(); i++) {
                long[] prompt = prompts.get(i);
                long[] completion = completions.get(i);
                long[] ids = Arrays.copyOf(prompt, prompt.length + completion.length);
                System.arraycopy(completion, 0, ids, prompt.length, completion.length);
                ids = Arrays.copyOf(ids, Math.min(ids.length, sequenceLength + 1));
                // The first token is never predicted, so an empty prompt still needs it as context.
                int promptLength = Math.max(prompt.length, 1);
                if (ids.length <= promptLength) {
                    dropped++;
                    continue;
                }
                kept.add(new Example(ids, promptLength));
            }
            long pad = padTokenId;
            dataBatchifier =
                    PaddingStackBatchifier.builder()
                            .optIncludeValidLengths(false)
                            .addPad(0, 0, m -> m.create(pad))
                            .build();
            labelBatchifier =
                    PaddingStackBatchifier.builder()
                            .optIncludeValidLengths(false)
                            .addPad(0, 0, m -> m.create(CausalLmLoss.IGNORE_INDEX))
                            .build();
            return new PromptCompletionDataset(this, kept, dropped);
        }
    }
}
