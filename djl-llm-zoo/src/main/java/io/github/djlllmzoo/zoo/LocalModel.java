package io.github.djlllmzoo.zoo;

import ai.djl.Device;
import ai.djl.MalformedModelException;
import ai.djl.Model;
import ai.djl.inference.Predictor;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.translate.TranslateException;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.DecoderModels;
import io.github.djlllmzoo.blocks.Float16Overflow;
import io.github.djlllmzoo.blocks.InvalidCheckpointException;
import io.github.djlllmzoo.blocks.LoraAdapter;
import io.github.djlllmzoo.blocks.WeightFormat;
import io.github.djlllmzoo.blocks.config.CheckpointFiles;
import io.github.djlllmzoo.blocks.config.Configs;
import io.github.djlllmzoo.blocks.config.DecoderConfig;
import io.github.djlllmzoo.constrained.OutputConstraint;
import io.github.djlllmzoo.constrained.RecordSchema;
import io.github.djlllmzoo.translators.BatchGenerator;
import io.github.djlllmzoo.translators.Completion;
import io.github.djlllmzoo.translators.FinishReason;
import io.github.djlllmzoo.translators.GenerationConfig;
import io.github.djlllmzoo.translators.GenerationDefaults;
import io.github.djlllmzoo.translators.GenerationRequest;
import io.github.djlllmzoo.translators.GenerationResult;
import io.github.djlllmzoo.translators.GenerationTranslatorFactory;
import io.github.djlllmzoo.translators.Generator;
import io.github.djlllmzoo.translators.TextTokenizer;
import io.github.djlllmzoo.zoo.gguf.GgufCheckpoint;
import io.github.djlllmzoo.zoo.gguf.GgufFile;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A Hugging Face-layout checkpoint directory loaded into a DJL {@link Model} holding the family's
 * {@link CausalLmBlock}, with its tokenizer and {@code generation_config.json} when the directory
 * has them. Closing it frees the model's native memory.
 *
 * <p>Every {@code load} also takes a llama.cpp GGUF file ({@code *.gguf}) in place of the
 * directory: its hyperparameters and tokenizer become the Hugging Face files of the same model
 * ({@link GgufCheckpoint#filesDirectory}, which {@link #dir()} then names) and its weights are read
 * from the file.
 */
public final class LocalModel implements AutoCloseable {

    static {
        EngineDefaults.apply();
    }

    private final Path dir;
    private final DecoderConfig config;
    private final Model model;
    private final CausalLmBlock block;
    private final TextTokenizer tokenizer;
    private final GenerationDefaults generationDefaults;
    private volatile boolean closed;

    private LocalModel(
            Path dir,
            DecoderConfig config,
            Model model,
            CausalLmBlock block,
            TextTokenizer tokenizer,
            GenerationDefaults generationDefaults) {
        this.dir = dir;
        this.config = config;
        this.model = model;
        this.block = block;
        this.tokenizer = tokenizer;
        this.generationDefaults = generationDefaults;
    }

    /**
     * Loads a checkpoint directory on the CPU in float32; a GGUF file with its projection weights in
     * the format nearest to the file's ({@link GgufCheckpoint#nativeFormat}: Q8_0 and Q4_0 as int8
     * without re-quantizing, F16 as float16 bits, ...).
     *
     * @param dir the directory ({@code config.json}, safetensors weights, tokenizer files), or a GGUF file
     * @return the loaded model
     * @throws IOException if a file cannot be read
     * @throws InvalidCheckpointException naming the file and field or tensor at fault
     */
    public static LocalModel load(Path dir) throws IOException, InvalidCheckpointException {
        if (GgufFile.isGguf(dir)) {
            WeightFormat format;
            try (GgufFile gguf = GgufFile.open(dir)) {
                format = GgufCheckpoint.nativeFormat(gguf);
            }
            return load(dir, Device.cpu(), DataType.FLOAT32, format);
        }
        return load(dir, Device.cpu(), DataType.FLOAT32);
    }

    /**
     * Loads a checkpoint directory.
     *
     * @param dir the directory ({@code config.json}, safetensors weights, tokenizer files)
     * @param device where to run
     * @param dataType the element type of weights and cache (FLOAT32 on CPU)
     * @return the loaded model
     * @throws IOException if a file cannot be read
     * @throws InvalidCheckpointException naming the file and field or tensor at fault
     */
    public static LocalModel load(Path dir, Device device, DataType dataType)
            throws IOException, InvalidCheckpointException {
        return load(dir, device, dataType, WeightFormat.FLOAT32);
    }

    /**
     * Loads a checkpoint directory on the CPU with its projection weights held as {@code weights}
     * ({@link CausalLmBlock#compressWeights}); it computes in float32 and runs inference only.
     *
     * @param dir the directory ({@code config.json}, safetensors weights, tokenizer files)
     * @param weights the form of the projection weights
     * @return the loaded model
     * @throws IOException if a file cannot be read
     * @throws InvalidCheckpointException naming the file and field or tensor at fault
     */
    public static LocalModel load(Path dir, WeightFormat weights) throws IOException, InvalidCheckpointException {
        return load(dir, Device.cpu(), DataType.FLOAT32, weights);
    }

    /**
     * Loads a checkpoint directory with its projection weights held as {@code weights}.
     *
     * @param dir the directory ({@code config.json}, safetensors weights, tokenizer files)
     * @param device where to run
     * @param dataType the element type of the computation, the other weights and the cache
     * @param weights the form of the projection weights ({@link WeightFormat#FLOAT32}: as {@code
     *     dataType})
     * @return the loaded model
     * @throws IOException if a file cannot be read
     * @throws InvalidCheckpointException naming the file and field or tensor at fault
     */
    public static LocalModel load(Path dir, Device device, DataType dataType, WeightFormat weights)
            throws IOException, InvalidCheckpointException {
        Model model = loadModel(dir, device, dataType, weights);
        return withTokenizer(GgufFile.isGguf(dir) ? model.getModelPath() : dir, model);
    }

    /**
     * Loads a checkpoint directory, saying whether a family whose activations exceed float16's range
     * (Gemma 2 and 3) may compute in float16 when {@code dataType} asks for it; the other loads
     * {@linkplain Float16Overflow#GUARD guard} it, computing such a family in float32.
     *
     * @param dir the directory ({@code config.json}, safetensors weights, tokenizer files)
     * @param device where to run
     * @param dataType the element type of the computation, the other weights and the cache
     * @param weights the form of the projection weights ({@link WeightFormat#FLOAT32}: as {@code
     *     dataType})
     * @param overflow whether float16 is kept for such a family
     * @return the loaded model
     * @throws IOException if a file cannot be read
     * @throws InvalidCheckpointException naming the file and field or tensor at fault
     */
    public static LocalModel load(
            Path dir, Device device, DataType dataType, WeightFormat weights, Float16Overflow overflow)
            throws IOException, InvalidCheckpointException {
        return withTokenizer(dir, loadModel(dir, device, dataType, weights, overflow));
    }

    /**
     * Wraps a model holding a block with the directory's generation defaults and tokenizer, checking
     * that the tokenizer's ids fit the model; closes the model on failure.
     */
    private static LocalModel withTokenizer(Path dir, Model model) throws InvalidCheckpointException {
        try {
            GenerationDefaults generationDefaults = GenerationDefaults.read(dir).orElse(null);
            TextTokenizer tokenizer = TextTokenizer.isPresent(dir) ? TextTokenizer.load(dir) : null;
            CausalLmBlock block = (CausalLmBlock) model.getBlock();
            if (tokenizer != null && tokenizer.vocabularySize() > block.config().vocabSize()) {
                int size = tokenizer.vocabularySize();
                tokenizer.close();
                throw new InvalidCheckpointException(
                        dir.resolve(Files.isRegularFile(dir.resolve(CheckpointFiles.TOKENIZER)) ? CheckpointFiles.TOKENIZER : CheckpointFiles.VOCAB),
                        "vocab",
                        "the tokenizer has " + size + " tokens but config.json's vocab_size is "
                                + block.config().vocabSize() + ": its ids would fall outside the model");
            }
            return new LocalModel(dir, block.config(), model, block, tokenizer, generationDefaults);
        } catch (InvalidCheckpointException | RuntimeException e) {
            model.close();
            throw e;
        }
    }

    /**
     * Loads a checkpoint directory into a DJL {@link Model} whose block is the family's {@link
     * CausalLmBlock} with its weights, and whose {@link Model#getModelPath()} is the directory (so
     * translators find the tokenizer there).
     *
     * @param dir the checkpoint directory
     * @param device where to run
     * @param dataType the element type of weights and cache (FLOAT32 on CPU)
     * @return the model; the caller closes it
     * @throws IOException if a file cannot be read
     * @throws InvalidCheckpointException naming the file and field or tensor at fault
     */
    public static Model loadModel(Path dir, Device device, DataType dataType)
            throws IOException, InvalidCheckpointException {
        return loadModel(dir, device, dataType, WeightFormat.FLOAT32);
    }

    /**
     * {@link #loadModel(Path, Device, DataType)} with the projection weights held as {@code
     * weights}.
     *
     * @param dir the checkpoint directory
     * @param device where to run
     * @param dataType the element type of the computation, the other weights and the cache
     * @param weights the form of the projection weights
     * @return the model; the caller closes it
     * @throws IOException if a file cannot be read
     * @throws InvalidCheckpointException naming the file and field or tensor at fault
     */
    public static Model loadModel(Path dir, Device device, DataType dataType, WeightFormat weights)
            throws IOException, InvalidCheckpointException {
        return loadModel(dir, device, dataType, weights, Float16Overflow.GUARD);
    }

    /**
     * {@link #loadModel(Path, Device, DataType, WeightFormat)}, saying whether a family whose
     * activations exceed float16's range may compute in float16 ({@link Float16Overflow}).
     *
     * @param dir the checkpoint directory
     * @param device where to run
     * @param dataType the element type of the computation, the other weights and the cache
     * @param weights the form of the projection weights
     * @param overflow whether float16 is kept for such a family
     * @return the model, whose {@link Model#getDataType()} is the element type it computes in; the
     *     caller closes it
     * @throws IOException if a file cannot be read
     * @throws InvalidCheckpointException naming the file and field or tensor at fault
     */
    public static Model loadModel(
            Path dir, Device device, DataType dataType, WeightFormat weights, Float16Overflow overflow)
            throws IOException, InvalidCheckpointException {
        if (GgufFile.isGguf(dir)) {
            return loadGguf(dir, device, dataType, weights, overflow);
        }
        Model model = withoutWeights(dir, device, dataType, overflow);
        try {
            CheckpointWeights.load(
                    (CausalLmBlock) model.getBlock(), dir, model.getNDManager(), model.getDataType(), weights);
            // The block already holds its weights: this only records the model directory.
            model.load(dir, null, Map.of("hasParameter", "false"));
            LoadGarbage.releaseAfter(CheckpointWeights.files(dir));
            return model;
        } catch (InvalidCheckpointException e) {
            model.close();
            throw e;
        } catch (MalformedModelException e) {
            model.close();
            throw new InvalidCheckpointException(dir, null, e.getMessage(), e);
        } catch (IOException | RuntimeException e) {
            model.close();
            throw e;
        }
    }

    /**
     * A GGUF file's model: the block from the {@code config.json} its metadata gives, the weights
     * from its tensors; the model's path is the directory of its Hugging Face files.
     */
    private static Model loadGguf(
            Path file, Device device, DataType dataType, WeightFormat weights, Float16Overflow overflow)
            throws IOException, InvalidCheckpointException {
        Model model;
        List<Path> read;
        try (GgufFile gguf = GgufFile.open(file)) {
            Path files = GgufCheckpoint.filesDirectory(gguf);
            model = withoutWeights(files, device, dataType, overflow);
            read = gguf.files();
            try {
                GgufCheckpoint.loadWeights((CausalLmBlock) model.getBlock(), gguf, model.getNDManager(), dataType, weights);
                model.load(files, null, Map.of("hasParameter", "false"));
            } catch (MalformedModelException e) {
                model.close();
                throw e instanceof InvalidCheckpointException ice
                        ? ice : new InvalidCheckpointException(file, null, e.getMessage(), e);
            } catch (IOException | RuntimeException e) {
                model.close();
                throw e;
            }
        }
        LoadGarbage.releaseAfter(read); // the file closed: its reads' buffer is garbage too
        return model;
    }

    /**
     * Creates a model from a checkpoint directory's {@code config.json} with freshly initialized
     * weights (each block's own initializer, e.g. normal(0, 0.02) for GPT-2 projections), to train
     * from scratch; weight files in the directory are ignored. Seed the engine ({@code
     * Engine.setRandomSeed}) first for reproducible weights.
     *
     * @param dir the directory ({@code config.json}, optionally tokenizer files)
     * @param device where to run
     * @param dataType the element type of the weights
     * @return the model
     * @throws InvalidCheckpointException naming the file and field at fault
     */
    public static LocalModel initialize(Path dir, Device device, DataType dataType)
            throws InvalidCheckpointException {
        Model model = withoutWeights(dir, device, dataType, Float16Overflow.GUARD);
        try {
            model.getBlock().initialize(model.getNDManager(), dataType, new Shape(1, 1));
        } catch (RuntimeException e) {
            model.close();
            throw e;
        }
        return withTokenizer(dir, model);
    }

    /**
     * A model whose block is the family's {@link CausalLmBlock} for the directory's {@code
     * config.json}, its parameters not yet given values, computing in {@code dataType} unless {@code
     * overflow} says otherwise for the family.
     */
    private static Model withoutWeights(Path dir, Device device, DataType dataType, Float16Overflow overflow)
            throws InvalidCheckpointException {
        if (!Files.isDirectory(dir)) {
            throw new InvalidCheckpointException(dir, null, "not a checkpoint directory");
        }
        DecoderConfig config = Configs.read(dir);
        CausalLmBlock block = DecoderModels.create(config);
        Model model = Model.newInstance(dir.getFileName().toString(), device, "PyTorch");
        model.setBlock(block);
        model.setDataType(overflow.computeType(config, dataType));
        return model;
    }

    /** @return the checkpoint directory */
    public Path dir() {
        return dir;
    }

    /** @return the parsed config */
    public DecoderConfig config() {
        return config;
    }

    /** @return the settings of {@code generation_config.json}, when the checkpoint has one */
    public Optional<GenerationDefaults> generationDefaults() {
        return Optional.ofNullable(generationDefaults);
    }

    /**
     * The tokens that end generation: {@code eos_token_id} of {@code generation_config.json} when
     * the file names any, else that of {@code config.json}.
     *
     * @return the end-of-sequence ids (any of them ends a sequence); may be empty
     */
    public List<Integer> eosTokenIds() {
        return generationDefaults == null
                ? config.eosTokenIds()
                : generationDefaults.eosTokenIdsOr(config.eosTokenIds());
    }

    /**
     * The token that ends each document when texts are packed into training windows: the first of
     * {@link #eosTokenIds()} (GPT-2's {@code <|endoftext|>} 50256, the default model's 0).
     *
     * @return the id, or -1 when the checkpoint names no end-of-sequence token
     */
    public long documentSeparatorId() {
        List<Integer> eos = eosTokenIds();
        return eos.isEmpty() ? -1 : eos.get(0);
    }

    /**
     * The beginning-of-sequence token: {@code bos_token_id} of {@code generation_config.json} when
     * given, else that of {@code config.json}.
     *
     * @return the id, or {@code null} when neither file names one
     */
    public Integer bosTokenId() {
        if (generationDefaults != null && generationDefaults.bosTokenId() != null) {
            return generationDefaults.bosTokenId();
        }
        return config.bosTokenId();
    }

    /**
     * @return the DJL model holding the block
     * @throws IllegalStateException if this model has been closed
     */
    public Model model() {
        ensureOpen();
        return model;
    }

    /**
     * @return the model block
     * @throws IllegalStateException if this model has been closed
     */
    public CausalLmBlock block() {
        ensureOpen();
        return block;
    }

    /**
     * Loads a Hugging Face PEFT LoRA adapter of this model ({@link PeftAdapter}) and attaches it
     * under {@code name}: {@link LoraAdapter#DEFAULT} makes every pass compute with it; another
     * name only the passes that {@linkplain LoraAdapter#select select} it. The base weights are
     * shared, not copied.
     *
     * @param adapterDir the adapter directory ({@code adapter_config.json}, {@code
     *     adapter_model.safetensors})
     * @param name the name to attach it under
     * @return the attached adapter
     * @throws IOException if a file cannot be read
     * @throws InvalidCheckpointException if the adapter does not fit this model, naming file and field
     * @throws IllegalStateException if an adapter is already attached under {@code name}, or this
     *     model has been closed
     */
    public LoraAdapter attachAdapter(Path adapterDir, String name) throws IOException, InvalidCheckpointException {
        ensureOpen();
        return PeftAdapter.load(block, adapterDir, model.getNDManager(), false).attach(name);
    }

    /**
     * @return the tokenizer
     * @throws IllegalStateException if the checkpoint has no tokenizer files, or the model has been
     *     closed
     */
    public TextTokenizer tokenizer() {
        ensureOpen();
        if (tokenizer == null) {
            throw new IllegalStateException(
                    dir + " has no tokenizer (tokenizer.json, or vocab.json and merges.txt); use token ids");
        }
        return tokenizer;
    }

    /** @return whether the checkpoint has a tokenizer */
    public boolean hasTokenizer() {
        return tokenizer != null;
    }

    /**
     * @return a generator over this model
     * @throws IllegalStateException if this model has been closed
     */
    public Generator generator() {
        ensureOpen();
        return new Generator(block, model.getNDManager());
    }

    /**
     * A DJL predictor of generation requests over this model, with the checkpoint's defaults
     * ({@link GenerationTranslatorFactory}); not to be shared between threads, closed by its
     * caller.
     *
     * @return the predictor
     * @throws IllegalStateException if this model has been closed
     * @throws IllegalArgumentException if the checkpoint's generation or tokenizer config is
     *     malformed, naming the field
     */
    public Predictor<GenerationRequest, GenerationResult> newGenerationPredictor() {
        ensureOpen();
        try {
            return model.newPredictor(
                    new GenerationTranslatorFactory()
                            .newInstance(
                                    GenerationRequest.class, GenerationResult.class, model, Map.of()));
        } catch (TranslateException e) {
            throw new IllegalArgumentException(e.getMessage(), e);
        }
    }

    /**
     * Generates a record: derives the JSON Schema of {@code type} ({@link RecordSchema}: nested
     * records, lists, enums, {@code Optional}, boxed numbers), constrains decoding to it, and parses
     * the output, which is valid by construction. Uses the checkpoint's generation defaults
     * (sampling settings, EOS) with the whole context window as the token budget.
     *
     * @param prompt the prompt text (e.g. an instruction and the email to read)
     * @param type the record class
     * @param <T> the record type
     * @return the record the model wrote
     * @throws IllegalArgumentException if {@code type} has no JSON Schema mapping, naming the component
     * @throws IllegalStateException if the context window ends before the record does, or the model
     *     has no tokenizer or has been closed
     * @throws InvalidCheckpointException if {@code generation_config.json} is malformed
     */
    public <T> T generate(String prompt, Class<T> type) throws InvalidCheckpointException {
        GenerationConfig defaults =
                GenerationConfig.forCheckpoint(dir, config).maxNewTokens(config.maxPositions()).build();
        return generate(prompt, type, defaults);
    }

    /**
     * Generates a record as {@link #generate(String, Class)} does, with the given settings (their
     * constraint replaced by the record's schema).
     *
     * @param prompt the prompt text
     * @param type the record class
     * @param settings how to generate (budget, sampling, EOS tokens)
     * @param <T> the record type
     * @return the record the model wrote
     * @throws IllegalArgumentException if {@code type} has no JSON Schema mapping
     * @throws IllegalStateException if the budget or the context window ends before the record
     *     does, or the model has no tokenizer or has been closed
     */
    public <T> T generate(String prompt, Class<T> type, GenerationConfig settings) {
        OutputConstraint schema = OutputConstraint.jsonSchema(RecordSchema.of(type));
        GenerationConfig constrained = settings.toBuilder().numReturnSequences(1).optConstraint(schema).build();
        Completion out =
                new BatchGenerator(block(), model.getNDManager(), tokenizer())
                        .generate(List.of(GenerationRequest.of(prompt, constrained)), constrained)
                        .get(0)
                        .completions()
                        .get(0);
        if (out.finishReason() == FinishReason.LENGTH || out.finishReason() == FinishReason.CANCELLED) {
            throw new IllegalStateException(
                    "the output ended (" + out.finishReason().jsonName() + ") before the " + type.getSimpleName()
                            + " was complete after " + out.tokenIds().length + " tokens: " + out.text());
        }
        return RecordSchema.parse(out.text(), type);
    }

    /** @return whether {@link #close()} has been called */
    public boolean isClosed() {
        return closed;
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("model " + dir + " is closed");
        }
    }

    /** Frees the model's native memory and the tokenizer; later use is an {@link IllegalStateException}. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (tokenizer != null) {
            tokenizer.close();
        }
        model.close();
    }
}
