package io.github.djlllmzoo.zoo;

import ai.djl.Application;
import ai.djl.Device;
import ai.djl.MalformedModelException;
import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.repository.MRL;
import ai.djl.repository.Repository;
import ai.djl.repository.zoo.Criteria;
import ai.djl.repository.zoo.ModelLoader;
import ai.djl.repository.zoo.ModelNotFoundException;
import ai.djl.repository.zoo.ZooModel;
import ai.djl.translate.TranslateException;
import ai.djl.translate.Translator;
import ai.djl.translate.TranslatorFactory;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.KvCacheDtype;
import io.github.djlllmzoo.blocks.LoraAdapter;
import io.github.djlllmzoo.blocks.WeightFormat;
import io.github.djlllmzoo.translators.GenerationTranslatorFactory;
import io.github.djlllmzoo.zoo.gguf.GgufCheckpoint;
import io.github.djlllmzoo.zoo.gguf.GgufFile;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;

/**
 * Loads one registry model (or, for {@link LlmModelZoo#ANY_MODEL}, the model named by the
 * {@code "model"} argument) into a {@link ZooModel}: resolves it to a local Hugging Face-layout
 * directory (downloading into the Hugging Face cache when needed), builds the family's block with
 * its weights, and attaches the translator for the criteria's input and output types.
 *
 * <p>Criteria arguments: {@code model} (hub id, directory or {@code file://} URL), {@code
 * revision} (hub branch, tag or commit; default "main"), {@code dtype} ({@code float32} default;
 * on the CPU {@code bfloat16}, {@code float16} or {@code int8} hold the projection weights
 * compressed and compute in float32; on a GPU {@code float16}/{@code bfloat16} compute in that
 * type), and any Hugging Face hub variable ({@code HF_ENDPOINT},
 * {@code HF_HUB_CACHE}, {@code HF_TOKEN}, {@code HF_HUB_OFFLINE}, ...) to override the environment
 * for this load; {@code adapter}, the directory of a Hugging Face PEFT LoRA adapter of the model
 * ({@link PeftAdapter}) to compute with; {@code gguf_file}, a llama.cpp GGUF file of the hub
 * repository to load instead of its safetensors ({@code model} may also be a local {@code *.gguf}
 * file or {@code org/name:Q4_K_M}; without {@code dtype} a GGUF file's weights are held in the
 * format nearest to its own, {@link GgufCheckpoint#nativeFormat}). {@code optDevice} picks CPU or GPU.
 */
public final class LlmModelLoader implements ModelLoader {

    private static final Repository HUB = Repository.newInstance("huggingface", "https://huggingface.co");

    private final String artifactId;
    private final String reference;
    private final MRL mrl;

    /**
     * @param artifactId the artifact id criteria select this loader by
     * @param reference the model it loads, or {@code null} to take the {@code "model"} argument
     */
    LlmModelLoader(String artifactId, String reference) {
        this.artifactId = artifactId;
        this.reference = reference;
        this.mrl =
                MRL.model(HUB, Application.NLP.TEXT_GENERATION, LlmModelZoo.GROUP_ID, artifactId, "main", artifactId);
    }

    @Override
    public String getGroupId() {
        return LlmModelZoo.GROUP_ID;
    }

    @Override
    public String getArtifactId() {
        return artifactId;
    }

    @Override
    public Application getApplication() {
        return Application.NLP.TEXT_GENERATION;
    }

    @Override
    public MRL getMrl() {
        return mrl;
    }

    @Override
    public <I, O> ZooModel<I, O> loadModel(Criteria<I, O> criteria)
            throws IOException, ModelNotFoundException, MalformedModelException {
        Map<String, Object> arguments = ZooArguments.of(criteria);
        Path dir = resolve(arguments, false);
        Device device = criteria.getDevice() != null ? criteria.getDevice() : Engine.getEngine("PyTorch").defaultDevice();
        WeightFormat weights = ZooArguments.weightFormat(arguments, device);
        KvCacheDtype kvCacheDtype = ZooArguments.kvCacheDtype(arguments); // refused before the model loads
        if (GgufFile.isGguf(dir) && ZooArguments.string(arguments, "dtype") == null && !device.isGpu()) {
            try (GgufFile gguf = GgufFile.open(dir)) {
                weights = GgufCheckpoint.nativeFormat(gguf);
            }
        }
        Model model = LocalModel.loadModel(dir, device, ZooArguments.dataType(arguments, device), weights,
                ZooArguments.float16Overflow(arguments));
        try {
            ((CausalLmBlock) model.getBlock()).setKvCacheDtype(kvCacheDtype);
            String adapter = ZooArguments.string(arguments, "adapter");
            if (adapter != null) {
                PeftAdapter.load((CausalLmBlock) model.getBlock(), Path.of(adapter), model.getNDManager(), false)
                        .attach(LoraAdapter.DEFAULT);
            }
            TranslatorFactory factory =
                    criteria.getTranslatorFactory() != null
                            ? criteria.getTranslatorFactory()
                            : new GenerationTranslatorFactory();
            if (!factory.isSupported(criteria.getInputClass(), criteria.getOutputClass())) {
                throw new ModelNotFoundException(
                        "no translator for " + criteria.getInputClass().getSimpleName() + " -> "
                                + criteria.getOutputClass().getSimpleName()
                                + "; supported: " + factory.getSupportedTypes());
            }
            Translator<I, O> translator =
                    factory.newInstance(criteria.getInputClass(), criteria.getOutputClass(), model, arguments);
            return new ZooModel<>(model, translator);
        } catch (TranslateException e) {
            model.close();
            throw new MalformedModelException("cannot create the translator: " + e.getMessage(), e);
        } catch (RuntimeException | ModelNotFoundException | MalformedModelException | IOException e) {
            model.close();
            throw e;
        }
    }

    @Override
    public <I, O> boolean isDownloaded(Criteria<I, O> criteria) {
        Map<String, Object> arguments = ZooArguments.of(criteria);
        try {
            resolve(arguments, true);
            return true;
        } catch (IOException | ModelNotFoundException e) {
            return false;
        }
    }

    @Override
    public <I, O> void downloadModel(Criteria<I, O> criteria, ai.djl.util.Progress progress)
            throws IOException, ModelNotFoundException {
        Map<String, Object> arguments = ZooArguments.of(criteria);
        resolve(arguments, false);
    }

    /** The checkpoint directory of the model these arguments name, downloaded unless {@code offline}. */
    private Path resolve(Map<String, Object> arguments, boolean offline)
            throws IOException, ModelNotFoundException {
        return ModelReference.resolve(
                reference(arguments),
                ZooArguments.string(arguments, "revision"),
                ZooArguments.string(arguments, "gguf_file"),
                ZooArguments.hub(arguments, offline));
    }

    private String reference(Map<String, Object> arguments) throws ModelNotFoundException {
        String requested = ZooArguments.string(arguments, "model");
        if (reference == null) {
            if (requested == null) {
                throw new ModelNotFoundException(
                        "artifact '" + LlmModelZoo.ANY_MODEL + "' needs optArgument(\"model\", hub id or directory)");
            }
            return requested;
        }
        if (requested != null && !requested.equals(reference)) {
            throw new ModelNotFoundException(
                    "artifact '" + artifactId + "' does not load model '" + requested + "'");
        }
        return reference;
    }

    @Override
    public String toString() {
        return LlmModelZoo.GROUP_ID + ":" + artifactId;
    }
}
