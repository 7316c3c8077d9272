package io.github.djlllmzoo.translators;

import ai.djl.Model;
import ai.djl.modality.nlp.generate.CausalLMOutput;
import ai.djl.ndarray.NDList;
import ai.djl.translate.ArgumentsUtil;
import ai.djl.translate.TranslateException;
import ai.djl.translate.Translator;
import ai.djl.translate.TranslatorFactory;
import ai.djl.util.Pair;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.InvalidCheckpointException;
import io.github.djlllmzoo.constrained.OutputConstraint;
import java.lang.reflect.Type;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.WeakHashMap;

/**
 * Creates the translators of a {@link Model} holding a {@link CausalLmBlock}, so that {@code
 * Criteria.setTypes(...)} finds them:
 *
 * <ul>
 *   <li>{@code String → String}: {@link TextGenerationTranslator} (needs a tokenizer);
 *   <li>{@code GenerationRequest → GenerationResult}: {@link GenerationTranslator};
 *   <li>{@code NDList → CausalLMOutput}: {@link CausalLmOutputTranslator}, for DJL's {@code
 *       TextGenerator}.
 * </ul>
 *
 * <p>The checkpoint directory is the argument {@value #MODEL_DIR}, else the model property {@value
 * #MODEL_DIR}, else {@code model.getModelPath()}. Its tokenizer files give the tokenizer (loaded
 * once per model by a factory instance, shared by its translators, closed with the model) and its
 * {@code generation_config.json} the default {@link GenerationConfig}.
 * Arguments with Hugging Face names override those defaults: {@code max_new_tokens}, {@code
 * do_sample}, {@code temperature}, {@code top_k}, {@code top_p}, {@code min_p}, {@code
 * repetition_penalty}, {@code seed}, {@code num_return_sequences}, {@code stop_strings}
 * (comma-separated); and an output constraint ({@link GenerationConfig#constraint()}): {@code
 * json_schema} (a JSON Schema's text), {@code json_object} ({@code true}: any JSON object) or
 * {@code regex} (a regular expression the whole output matches), at most one of them.
 */
public final class GenerationTranslatorFactory implements TranslatorFactory {

    /** The argument and model property naming the checkpoint directory. */
    public static final String MODEL_DIR = "llmzoo.model_dir";

    private static final Set<Pair<Type, Type>> TYPES =
            Set.of(
                    new Pair<>(String.class, String.class),
                    new Pair<>(GenerationRequest.class, GenerationResult.class),
                    new Pair<>(NDList.class, CausalLMOutput.class));

    private final Map<Model, Map<Path, TextTokenizer>> tokenizers = new WeakHashMap<>();

    @Override
    public Set<Pair<Type, Type>> getSupportedTypes() {
        return TYPES;
    }

    @Override
    @SuppressWarnings("unchecked")
    public <I, O> Translator<I, O> newInstance(
            Class<I> input, Class<O> output, Model model, Map<String, ?> arguments)
            throws TranslateException {
        if (!isSupported(input, output)) {
            throw new IllegalArgumentException(
                    "unsupported types " + input.getName() + " -> " + output.getName()
                            + "; supported: String -> String, GenerationRequest -> GenerationResult,"
                            + " NDList -> CausalLMOutput");
        }
        CausalLmBlock block = GenerationTranslator.causalLm(model);
        if (input == NDList.class) {
            return (Translator<I, O>) new CausalLmOutputTranslator();
        }
        Path dir = checkpointDir(model, arguments);
        try {
            GenerationConfig defaults =
                    withArguments(GenerationConfig.forCheckpoint(dir, block.config()), arguments).build();
            TextTokenizer tokenizer = dir != null && TextTokenizer.isPresent(dir) ? tokenizer(model, dir) : null;
            if (defaults.constraint() != null && tokenizer != null) {
                tokenizer.tokenVocabulary().compile(defaults.constraint()); // refused now, not at the first request
            }
            GenerationTranslator generation = new GenerationTranslator(tokenizer, defaults);
            if (input == String.class) {
                return (Translator<I, O>) new TextGenerationTranslator(generation);
            }
            return (Translator<I, O>) generation;
        } catch (InvalidCheckpointException | IllegalArgumentException e) {
            throw new TranslateException(e.getMessage(), e);
        }
    }

    /**
     * The tokenizer of a model's directory, loaded once per model and directory however many
     * translators are made, and closed with the model.
     */
    private TextTokenizer tokenizer(Model model, Path dir) throws InvalidCheckpointException {
        synchronized (tokenizers) {
            Map<Path, TextTokenizer> byDir = tokenizers.computeIfAbsent(model, m -> new HashMap<>());
            TextTokenizer tokenizer = byDir.get(dir);
            if (tokenizer == null) {
                tokenizer = TextTokenizer.load(dir);
                model.getNDManager().attachInternal(UUID.randomUUID().toString(), tokenizer);
                byDir.put(dir, tokenizer);
            }
            return tokenizer;
        }
    }

    private static Path checkpointDir(Model model, Map<String, ?> arguments) {
        String dir = ArgumentsUtil.stringValue(arguments, MODEL_DIR, model.getProperty(MODEL_DIR));
        if (dir != null) {
            return Paths.get(dir);
        }
        return model.getModelPath();
    }

    private static GenerationConfig.Builder withArguments(
            GenerationConfig.Builder b, Map<String, ?> arguments) {
        if (arguments.containsKey("max_new_tokens")) {
            b.maxNewTokens(ArgumentsUtil.intValue(arguments, "max_new_tokens"));
        }
        if (arguments.containsKey("do_sample")) {
            b.doSample(ArgumentsUtil.booleanValue(arguments, "do_sample"));
        }
        if (arguments.containsKey("temperature")) {
            b.temperature(ArgumentsUtil.floatValue(arguments, "temperature"));
        }
        if (arguments.containsKey("top_k")) {
            b.topK(ArgumentsUtil.intValue(arguments, "top_k"));
        }
        if (arguments.containsKey("top_p")) {
            b.topP(ArgumentsUtil.floatValue(arguments, "top_p"));
        }
        if (arguments.containsKey("min_p")) {
            b.minP(ArgumentsUtil.floatValue(arguments, "min_p"));
        }
        if (arguments.containsKey("repetition_penalty")) {
            b.repetitionPenalty(ArgumentsUtil.floatValue(arguments, "repetition_penalty"));
        }
        if (arguments.containsKey("seed")) {
            b.seed(Long.parseLong(ArgumentsUtil.stringValue(arguments, "seed").trim()));
        }
        if (arguments.containsKey("num_return_sequences")) {
            b.numReturnSequences(ArgumentsUtil.intValue(arguments, "num_return_sequences"));
        }
        if (arguments.containsKey("stop_strings")) {
            b.stopStrings(Arrays.asList(ArgumentsUtil.stringValue(arguments, "stop_strings").split(",")));
        }
        return b.optConstraint(constraint(arguments));
    }

    /** The constraint of the arguments {@code json_schema}, {@code json_object}, {@code regex}. */
    private static OutputConstraint constraint(Map<String, ?> arguments) {
        List<OutputConstraint> given = new ArrayList<>();
        if (arguments.containsKey("json_schema")) {
            given.add(OutputConstraint.jsonSchema(ArgumentsUtil.stringValue(arguments, "json_schema")));
        }
        if (arguments.containsKey("json_object") && ArgumentsUtil.booleanValue(arguments, "json_object")) {
            given.add(OutputConstraint.anyJsonObject());
        }
        if (arguments.containsKey("regex")) {
            given.add(OutputConstraint.regex(ArgumentsUtil.stringValue(arguments, "regex")));
        }
        if (given.size() > 1) {
            throw new IllegalArgumentException("give at most one of the arguments json_schema, json_object and regex");
        }
        return given.isEmpty() ? null : given.get(0);
    }
}
