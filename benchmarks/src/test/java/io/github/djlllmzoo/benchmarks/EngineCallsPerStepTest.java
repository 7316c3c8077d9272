package io.github.djlllmzoo.benchmarks;

import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.EngineKernels;
import io.github.djlllmzoo.blocks.KvCache;
import io.github.djlllmzoo.zoo.LocalModel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The engine calls of one decode step per layer on {@link EngineKernels}, what computes on a GPU,
 * counted on the CPU by PyTorch's profiler ({@link EngineCalls}): the step of a golden config with
 * two layers less the step with one. Before the fused forms of {@code EngineForms} (commit 5d26247)
 * a Llama layer made 62 calls; the Llama layout's decode step must make at most half.
 */
class EngineCallsPerStepTest {

    @TempDir Path tmp;

    @ParameterizedTest
    @CsvSource({"llama-gqa, 62", "mistral-sliding-window, 62", "qwen2-bias, 65"})
    void aLlamaLayoutLayerMakesAtMostHalfTheEngineCallsItMadeBeforeFusion(String golden, int before)
            throws Exception {
        int calls = callsPerLayer(golden);
        assertTrue(2 * calls <= before, golden + ": " + calls + " calls a layer, " + before + " before");
    }

    @ParameterizedTest
    @CsvSource({
        "qwen3-qknorm, 74", "phi3-fused, 56", "gemma-bf16, 68", "gemma2-softcap-window, 85",
        "gemma3-local-global, 96", "gpt2-tiny, 36"
    })
    void everyOtherFamilysLayerMakesFewerEngineCallsThanBeforeFusion(String golden, int before) throws Exception {
        int calls = callsPerLayer(golden);
        assertTrue(calls < before, golden + ": " + calls + " calls a layer, " + before + " before");
    }

    private int callsPerLayer(String golden) throws Exception {
        EngineCalls one = step(golden, 1);
        EngineCalls two = step(golden, 2);
        int perLayer = two.total() - one.total();
        System.out.printf(
                "engine calls of a decode step on EngineKernels, %s: %d a layer, %d besides; one layer's step: %s%n",
                golden, perLayer, one.total() - perLayer, one.sequence());
        return perLayer;
    }

    /** One decode step (position 4 after a 4-token prompt) of the golden config with {@code layers} layers. */
    private EngineCalls step(String golden, int layers) throws Exception {
        Path source = Paths.get(System.getProperty("llmzoo.testdata", "../testdata"), "golden", golden, "config.json");
        JsonObject config = JsonParser.parseString(Files.readString(source, StandardCharsets.UTF_8)).getAsJsonObject();
        config.addProperty(config.has("n_layer") ? "n_layer" : "num_hidden_layers", layers);
        Path dir = Files.createDirectories(tmp.resolve(golden + "-" + layers));
        Files.writeString(dir.resolve("config.json"), config.toString(), StandardCharsets.UTF_8);
        try (LocalModel m = LocalModel.initialize(dir, Device.cpu(), DataType.FLOAT32)) {
            CausalLmBlock model = m.block();
            model.useKernels(EngineKernels.INSTANCE);
            NDManager manager = m.model().getNDManager();
            try (KvCache cache = model.newCache(manager, 1, 16)) {
                try (NDManager prefill = manager.newSubManager()) {
                    model.forward(null, prefill.create(new long[] {5, 6, 7, 8}, new Shape(1, 4)), null, null, cache, true, false);
                }
                Runnable step = () -> {
                    try (NDManager s = manager.newSubManager()) {
                        model.forward(null, s.create(new long[] {9}, new Shape(1, 1)), null, null, cache, true, false)
                                .argMax(-1).toLongArray();
                    }
                    cache.truncate(4);
                };
                step.run(); // placement, RoPE tables
                return EngineCalls.of(tmp.resolve(golden + layers + ".json"), step);
            }
        }
    }
}
