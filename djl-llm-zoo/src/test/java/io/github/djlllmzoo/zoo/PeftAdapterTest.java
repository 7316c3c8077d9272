package io.github.djlllmzoo.zoo;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.inference.Predictor;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.repository.zoo.Criteria;
import ai.djl.repository.zoo.ZooModel;
import ai.djl.translate.NoopTranslator;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.github.djlllmzoo.blocks.InvalidCheckpointException;
import io.github.djlllmzoo.blocks.KvCache;
import io.github.djlllmzoo.blocks.LoraAdapter;
import io.github.djlllmzoo.blocks.LoraConfig;
import io.github.djlllmzoo.blocks.LoraWeights;
import io.github.djlllmzoo.blocks.RoundingBound;
import io.github.djlllmzoo.blocks.config.Configs;
import io.github.djlllmzoo.zoo.safetensors.SafeTensorsReader;
import io.github.djlllmzoo.zoo.safetensors.SafeTensorsWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class PeftAdapterTest {

    private static final Path GOLDEN = Paths.get(System.getProperty("llmzoo.testdata", "../testdata"), "golden");
    private static final long[] PROMPT = {113, 455, 295, 39, 239};
    private static final int RANK = 4;
    private static final float ALPHA = 8;

    @TempDir Path tmp;

    /**
     * adapter_config.json as PEFT 0.13's {@code save_pretrained} writes it for {@code
     * LoraConfig(r=4, lora_alpha=8, target_modules=TARGETS, fan_in_fan_out=FAN, task_type="CAUSAL_LM")}.
     */
    private static final String PEFT_CONFIG =
            """
            {
              "alpha_pattern": {},
              "auto_mapping": null,
              "base_model_name_or_path": "BASE",
              "bias": "none",
              "fan_in_fan_out": FAN,
              "inference_mode": true,
              "init_lora_weights": true,
              "layer_replication": null,
              "layers_pattern": null,
              "layers_to_transform": null,
              "loftq_config": {},
              "lora_alpha": 8,
              "lora_dropout": 0.05,
              "megatron_config": null,
              "megatron_core": "megatron.core",
              "modules_to_save": null,
              "peft_type": "LORA",
              "r": 4,
              "rank_pattern": {},
              "revision": null,
              "target_modules": TARGETS,
              "task_type": "CAUSAL_LM",
              "use_dora": false,
              "use_rslora": false
            }
            """;

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"gpt2-tiny", "llama-gqa"})
    void anAdapterInPeftsLayoutLoadsAndComputesWhatItsMergedCheckpointComputes(String base) throws Exception {
        boolean gpt2 = base.startsWith("gpt2");
        // PEFT's tensor names for these targets, spelled out: module path, then lora_A / lora_B
        List<String> modules = gpt2
                ? List.of("transformer.h.0.attn.c_attn", "transformer.h.1.attn.c_attn",
                        "transformer.h.0.attn.c_proj", "transformer.h.1.attn.c_proj",
                        "transformer.h.0.mlp.c_proj", "transformer.h.1.mlp.c_proj")
                : List.of("model.layers.0.self_attn.q_proj", "model.layers.1.self_attn.q_proj",
                        "model.layers.0.self_attn.v_proj", "model.layers.1.self_attn.v_proj",
                        "model.layers.0.mlp.down_proj", "model.layers.1.mlp.down_proj");
        String targets = gpt2 ? "[\"c_proj\", \"c_attn\"]" : "[\"v_proj\", \"down_proj\", \"q_proj\"]";
        Path adapter = Files.createDirectory(tmp.resolve("adapter"));
        Path merged = Files.createDirectory(tmp.resolve("merged"));
        Files.writeString(adapter.resolve("adapter_config.json"),
                PEFT_CONFIG.replace("BASE", base).replace("FAN", String.valueOf(gpt2)).replace("TARGETS", targets),
                StandardCharsets.UTF_8);
        Files.copy(GOLDEN.resolve(base).resolve("config.json"), merged.resolve("config.json"));
        Random random = new Random(gpt2 ? 1 : 2);
        float scaling = ALPHA / RANK;
        try (NDManager manager = NDManager.newBaseManager("PyTorch");
                SafeTensorsReader reader = SafeTensorsReader.open(GOLDEN.resolve(base).resolve("model.safetensors"))) {
            Map<String, NDArray> loraTensors = new LinkedHashMap<>();
            Map<String, NDArray> mergedTensors = new LinkedHashMap<>();
            for (String name : reader.tensors().keySet()) {
                mergedTensors.put(name, reader.load(name, manager, DataType.FLOAT32));
            }
            for (String module : modules) {
                // GPT-2's checkpoint stores its weights without "transformer."
                String weightName = gpt2 ? module.substring("transformer.".length()) + ".weight" : module + ".weight";
                long[] shape = reader.tensors().get(weightName).toShape().getShape();
                int in = (int) (gpt2 ? shape[0] : shape[1]);
                int out = (int) (gpt2 ? shape[1] : shape[0]);
                float[] a = gaussian(random, RANK * in, 0.3);
                float[] b = gaussian(random, out * RANK, 0.3);
                loraTensors.put("base_model.model." + module + ".lora_A.weight", manager.create(a, new Shape(RANK, in)));
                loraTensors.put("base_model.model." + module + ".lora_B.weight", manager.create(b, new Shape(out, RANK)));
                float[] w = reader.toFloatArray(weightName);
                for (int o = 0; o < out; o++) {
                    for (int i = 0; i < in; i++) {
                        double delta = 0;
                        for (int k = 0; k < RANK; k++) {
                            delta += (double) b[o * RANK + k] * a[k * in + i];
                        }
                        w[gpt2 ? i * out + o : o * in + i] += (float) (scaling * delta);
                    }
                }
                mergedTensors.put(weightName, manager.create(w, new Shape(shape)));
            }
            SafeTensorsWriter.write(adapter.resolve("adapter_model.safetensors"), loraTensors, Map.of("format", "pt"));
            SafeTensorsWriter.write(merged.resolve("model.safetensors"), mergedTensors, Map.of("format", "pt"));
        }

        float[] baseLogits;
        float[] adapted;
        try (LocalModel model = LocalModel.load(GOLDEN.resolve(base))) {
            baseLogits = logits(model);
            LoraAdapter attached = model.attachAdapter(adapter, LoraAdapter.DEFAULT);
            assertEquals(6, attached.modules().size());
            assertEquals(gpt2, attached.fanInFanOut());
            assertEquals(base, PeftAdapter.baseModel(adapter));
            adapted = logits(model);
        }
        float[] expected;
        try (LocalModel model = LocalModel.load(merged)) {
            expected = logits(model);
        }
        assertFalse(java.util.Arrays.equals(baseLogits, adapted), "the adapter changes the logits");
        float bound = RoundingBound.ofLogits(Configs.read(merged.resolve("config.json")), PROMPT.length, expected);
        assertArrayEquals(expected, adapted, Math.min(bound, 1e-4f));
    }

    @Test
    void anAdapterThisProjectWritesHasPeftsNamesAndConfigAndLoadsBackExactly() throws Exception {
        Path base = GOLDEN.resolve("llama-gqa");
        Path out = Files.createDirectory(tmp.resolve("written"));
        float[] expected;
        try (LocalModel model = LocalModel.load(base)) {
            LoraAdapter adapter =
                    LoraAdapter.declare(model.block(), new LoraConfig(RANK, ALPHA, 0.1f, List.of("q_proj", "o_proj")), false)
                            .initialize(model.model().getNDManager(), DataType.FLOAT32)
                            .attach(LoraAdapter.DEFAULT);
            for (LoraWeights pair : adapter.modules().values()) {
                pair.b().getArray().addi(model.model().getNDManager().randomNormal(0, 0.2f, pair.bShape(), DataType.FLOAT32));
            }
            expected = logits(model);
            PeftAdapter.write(adapter, out, "my/base");
        }
        JsonObject config = JsonParser.parseString(Files.readString(out.resolve("adapter_config.json"))).getAsJsonObject();
        assertEquals("LORA", config.get("peft_type").getAsString());
        assertEquals("CAUSAL_LM", config.get("task_type").getAsString());
        assertEquals(RANK, config.get("r").getAsInt());
        assertEquals(ALPHA, config.get("lora_alpha").getAsFloat());
        assertEquals(0.1f, config.get("lora_dropout").getAsFloat());
        assertEquals("[\"q_proj\",\"o_proj\"]", config.get("target_modules").toString());
        assertFalse(config.get("fan_in_fan_out").getAsBoolean());
        assertEquals("none", config.get("bias").getAsString());
        assertEquals("my/base", config.get("base_model_name_or_path").getAsString());
        try (SafeTensorsReader reader = SafeTensorsReader.open(out.resolve("adapter_model.safetensors"))) {
            assertEquals(new Shape(RANK, 64),
                    reader.tensors().get("base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight").toShape());
            assertEquals(new Shape(64, RANK),
                    reader.tensors().get("base_model.model.model.layers.1.self_attn.o_proj.lora_B.weight").toShape());
            assertEquals(8, reader.tensors().size());
        }
        try (LocalModel model = LocalModel.load(base)) {
            model.attachAdapter(out, LoraAdapter.DEFAULT);
            assertArrayEquals(expected, logits(model));
        }
        Criteria<NDList, NDList> criteria =
                Criteria.builder()
                        .setTypes(NDList.class, NDList.class)
                        .optGroupId(LlmModelZoo.GROUP_ID)
                        .optArtifactId(LlmModelZoo.ANY_MODEL)
                        .optArgument("model", base.toString())
                        .optArgument("adapter", out.toString())
                        .optTranslator(new NoopTranslator())
                        .build();
        try (ZooModel<NDList, NDList> model = criteria.loadModel();
                Predictor<NDList, NDList> predictor = model.newPredictor();
                NDManager manager = NDManager.newBaseManager("PyTorch")) {
            NDList logits = predictor.predict(new NDList(manager.create(PROMPT, new Shape(1, PROMPT.length))));
            float[] last = logits.singletonOrThrow().get("0, -1").toFloatArray();
            assertArrayEquals(expected, last, RoundingBound.ofLogits(Configs.read(base.resolve("config.json")), PROMPT.length, expected));
        }
    }

    @Test
    void adaptersThisProjectCannotComputeAreRefusedNamingTheField() throws Exception {
        Path base = GOLDEN.resolve("llama-gqa");
        Map<String, UnaryOperator<String>> edits = Map.of(
                "peft_type", s -> s.replace("\"LORA\"", "\"PREFIX_TUNING\""),
                "use_dora", s -> s.replace("\"use_dora\": false", "\"use_dora\": true"),
                "modules_to_save", s -> s.replace("\"modules_to_save\": null", "\"modules_to_save\": [\"lm_head\"]"),
                "target_modules", s -> s.replace("TARGETS", "[\"c_attn\"]"));
        for (Map.Entry<String, UnaryOperator<String>> e : edits.entrySet()) {
            Path dir = Files.createDirectory(tmp.resolve(e.getKey()));
            Files.writeString(dir.resolve("adapter_config.json"),
                    e.getValue().apply(PEFT_CONFIG).replace("TARGETS", "[\"q_proj\"]").replace("FAN", "false"));
            try (LocalModel model = LocalModel.load(base)) {
                InvalidCheckpointException error =
                        assertThrows(InvalidCheckpointException.class, () -> model.attachAdapter(dir, "x"));
                assertEquals(e.getKey(), error.getField(), error.getMessage());
            }
        }
        Path missing = Files.createDirectory(tmp.resolve("missing"));
        Files.writeString(missing.resolve("adapter_config.json"),
                PEFT_CONFIG.replace("TARGETS", "[\"q_proj\"]").replace("FAN", "false"));
        try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
            SafeTensorsWriter.write(missing.resolve("adapter_model.safetensors"),
                    Map.of("base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight",
                            manager.zeros(new Shape(RANK, 64))),
                    Map.of("format", "pt"));
        }
        try (LocalModel model = LocalModel.load(base)) {
            InvalidCheckpointException error =
                    assertThrows(InvalidCheckpointException.class, () -> model.attachAdapter(missing, "x"));
            assertEquals("base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight", error.getField(),
                    error.getMessage());
        }
    }

    private static float[] logits(LocalModel model) {
        try (KvCache cache = model.block().newCache(model.model().getNDManager(), 1, 8)) {
            return model.generator().nextLogits(PROMPT, cache);
        }
    }

    private static float[] gaussian(Random random, int n, double std) {
        float[] out = new float[n];
        for (int i = 0; i < n; i++) {
            out[i] = (float) (random.nextGaussian() * std);
        }
        return out;
    }
}
