package io.github.djlllmzoo.zoo;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.InvalidCheckpointException;
import io.github.djlllmzoo.blocks.LoraAdapter;
import io.github.djlllmzoo.blocks.LoraConfig;
import io.github.djlllmzoo.blocks.config.ConfigJson;
import io.github.djlllmzoo.zoo.safetensors.SafeTensorsReader;
import io.github.djlllmzoo.zoo.safetensors.SafeTensorsWriter;
import io.github.djlllmzoo.zoo.safetensors.TensorInfo;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;

/**
 * Hugging Face PEFT's LoRA adapter directory, read and written as PEFT's {@code save_pretrained}
 * writes it: {@code adapter_config.json} ({@code peft_type} LORA, {@code task_type} CAUSAL_LM,
 * {@code r}, {@code lora_alpha}, {@code lora_dropout}, {@code target_modules}, {@code
 * fan_in_fan_out}, {@code bias} none, {@code base_model_name_or_path}) and {@code
 * adapter_model.safetensors}, whose tensors are named {@code base_model.model.<module>.lora_A.weight}
 * and {@code .lora_B.weight} without the adapter's name, e.g. {@code
 * base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight}. A and B are (r, in) and (out,
 * r) for every target, GPT-2's {@code Conv1D} ({@code fan_in_fan_out}) included.
 *
 * <p>Features this project does not compute are refused by name rather than ignored: {@code
 * use_rslora}, {@code use_dora}, {@code modules_to_save}, per-module {@code rank_pattern} and
 * {@code alpha_pattern}, {@code layers_to_transform}, a {@code bias} other than none.
 */
public final class PeftAdapter {

    /** The adapter's config file. */
    public static final String CONFIG = "adapter_config.json";
    /** The adapter's tensors. */
    public static final String WEIGHTS = "adapter_model.safetensors";
    /** What PEFT's {@code PeftModel} puts before a module's checkpoint name. */
    public static final String PREFIX = "base_model.model.";

    private static final Gson GSON = new GsonBuilder().setPrettyPrinting().serializeNulls().create();

    private PeftAdapter() {}

    /**
     * @param dir a directory
     * @return whether it holds an adapter config
     */
    public static boolean isAdapter(Path dir) {
        return Files.isRegularFile(dir.resolve(CONFIG));
    }

    /**
     * Reads the LoRA hyper-parameters of an adapter directory.
     *
     * @param dir the adapter directory
     * @return the config
     * @throws InvalidCheckpointException if the file is missing, malformed, not LoRA, or asks for
     *     something this project does not compute, naming the field
     */
    public static LoraConfig readConfig(Path dir) throws InvalidCheckpointException {
        ConfigJson json = ConfigJson.read(dir.resolve(CONFIG));
        String type = json.requireString("peft_type");
        if (!type.equals("LORA")) {
            throw json.invalid("peft_type", "only LORA adapters are supported");
        }
        String task = json.optString("task_type", "CAUSAL_LM");
        if (!task.equals("CAUSAL_LM")) {
            throw json.invalid("task_type", "only CAUSAL_LM adapters are supported");
        }
        if (!json.optString("bias", "none").equals("none")) {
            throw json.invalid("bias", "only bias \"none\" is supported");
        }
        for (String flag : new String[] {"use_rslora", "use_dora"}) {
            if (json.optBoolean(flag, false)) {
                throw json.invalid(flag, "is not supported");
            }
        }
        for (String field : new String[] {"modules_to_save", "layers_to_transform", "rank_pattern", "alpha_pattern"}) {
            JsonElement value = json.json().get(field);
            boolean empty = value == null || value.isJsonNull()
                    || (value.isJsonArray() && value.getAsJsonArray().isEmpty())
                    || (value.isJsonObject() && value.getAsJsonObject().isEmpty());
            if (!empty) {
                throw json.invalid(field, "is not supported");
            }
        }
        int rank = json.requireInt("r");
        double alpha = json.optDouble("lora_alpha", LoraConfig.DEFAULT_RANK);
        double dropout = json.optDouble("lora_dropout", 0);
        JsonElement targets = json.json().get("target_modules");
        List<String> modules = new ArrayList<>();
        String pattern = null;
        if (targets == null || targets.isJsonNull()) {
            throw new InvalidCheckpointException(json.file(), "target_modules", "required field is missing");
        } else if (targets.isJsonPrimitive() && targets.getAsJsonPrimitive().isString()) {
            pattern = targets.getAsString();
        } else if (targets.isJsonArray()) {
            for (JsonElement e : targets.getAsJsonArray()) {
                if (!e.isJsonPrimitive() || !e.getAsJsonPrimitive().isString()) {
                    throw json.invalid("target_modules", "expected module names");
                }
                modules.add(e.getAsString());
            }
        } else {
            throw json.invalid("target_modules", "expected a list of module names or a regular expression");
        }
        try {
            return new LoraConfig(rank, (float) alpha, (float) dropout, modules, pattern);
        } catch (IllegalArgumentException e) {
            throw new InvalidCheckpointException(json.file(), "r", e.getMessage());
        }
    }

    /**
     * @param dir the adapter directory
     * @return its {@code base_model_name_or_path}, or {@code null} when it names none
     * @throws InvalidCheckpointException if the config cannot be read
     */
    public static String baseModel(Path dir) throws InvalidCheckpointException {
        return ConfigJson.read(dir.resolve(CONFIG)).optString("base_model_name_or_path", null);
    }

    /**
     * Loads an adapter of {@code model}, unattached.
     *
     * @param model the base model
     * @param dir the adapter directory
     * @param manager the manager to own A and B (the model's)
     * @param trainable whether A and B record gradients (to continue training them)
     * @return the adapter, its values loaded, in the model's element type
     * @throws IOException if a file cannot be read
     * @throws InvalidCheckpointException if the config is invalid, no projection of the model is a
     *     target, or a tensor is missing, unexpected or of the wrong shape, naming file and tensor
     */
    public static LoraAdapter load(CausalLmBlock model, Path dir, NDManager manager, boolean trainable)
            throws IOException, InvalidCheckpointException {
        LoraConfig config = readConfig(dir);
        LoraAdapter adapter;
        try {
            adapter = LoraAdapter.declare(model, config, trainable);
        } catch (IllegalArgumentException e) {
            throw new InvalidCheckpointException(dir.resolve(CONFIG), "target_modules", e.getMessage());
        }
        Map<String, Parameter> parameters = adapter.namedParameters();
        Map<String, Shape> shapes = adapter.declaredShapes();
        Path file = dir.resolve(WEIGHTS);
        if (!Files.isRegularFile(file)) {
            throw new InvalidCheckpointException(file, WEIGHTS, "the adapter has no weights file");
        }
        DataType dataType = model.dataType();
        try (SafeTensorsReader reader = SafeTensorsReader.open(file)) {
            Set<String> expected = new LinkedHashSet<>();
            for (Map.Entry<String, Parameter> e : parameters.entrySet()) {
                String stored = storedName(adapter, e.getKey());
                expected.add(stored);
                TensorInfo info = reader.tensors().get(stored);
                if (info == null) {
                    throw new InvalidCheckpointException(file, stored, "missing tensor the adapter config targets");
                }
                if (!info.toShape().equals(shapes.get(e.getKey()))) {
                    throw new InvalidCheckpointException(
                            file, stored, "shape " + info.toShape() + " disagrees with the base model and r = "
                                    + config.rank() + ", which imply " + shapes.get(e.getKey()));
                }
                e.getValue().setArray(reader.load(stored, manager, dataType));
                e.getValue().freeze(!trainable); // records gradients on the loaded array too
            }
            for (String stored : reader.tensors().keySet()) {
                if (!expected.contains(stored)) {
                    throw new InvalidCheckpointException(
                            file, stored, "tensor the base model has no target for");
                }
            }
        }
        return adapter;
    }

    /**
     * Writes an adapter's two files into {@code dir}, each atomically.
     *
     * @param adapter the adapter
     * @param dir an existing directory
     * @param baseModel the base model's name or path, for {@code base_model_name_or_path}
     * @throws IOException if a file cannot be written
     */
    public static void write(LoraAdapter adapter, Path dir, String baseModel) throws IOException {
        Map<String, NDArray> tensors = new LinkedHashMap<>();
        for (Map.Entry<String, Parameter> e : adapter.namedParameters().entrySet()) {
            tensors.put(storedName(adapter, e.getKey()), e.getValue().getArray());
        }
        SafeTensorsWriter.write(dir.resolve(WEIGHTS), tensors, Map.of("format", "pt"));
        Path tmp = dir.resolve("." + CONFIG + ".tmp-" + UUID.randomUUID());
        try {
            Files.writeString(tmp, GSON.toJson(configJson(adapter, baseModel)) + "\n", StandardCharsets.UTF_8);
            Files.move(tmp, dir.resolve(CONFIG), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    private static JsonObject configJson(LoraAdapter adapter, String baseModel) {
        LoraConfig config = adapter.config();
        JsonObject json = new JsonObject();
        json.addProperty("peft_type", "LORA");
        json.addProperty("task_type", "CAUSAL_LM");
        json.addProperty("base_model_name_or_path", baseModel);
        json.addProperty("r", config.rank());
        json.addProperty("lora_alpha", config.alpha());
        json.addProperty("lora_dropout", config.dropout());
        if (config.targetPattern() != null) {
            json.addProperty("target_modules", config.targetPattern());
        } else {
            JsonArray targets = new JsonArray();
            config.targetModules().forEach(targets::add);
            json.add("target_modules", targets);
        }
        json.addProperty("fan_in_fan_out", adapter.fanInFanOut());
        json.addProperty("bias", "none");
        json.addProperty("use_rslora", false);
        json.addProperty("use_dora", false);
        json.add("modules_to_save", null);
        json.add("layers_to_transform", null);
        json.add("rank_pattern", new JsonObject());
        json.add("alpha_pattern", new JsonObject());
        json.addProperty("init_lora_weights", true);
        json.addProperty("inference_mode", true);
        json.add("revision", null);
        return json;
    }

    private static String storedName(LoraAdapter adapter, String parameterName) {
        int cut = parameterName.lastIndexOf(".lora_");
        return PREFIX + adapter.moduleName(parameterName.substring(0, cut)) + parameterName.substring(cut);
    }
}
