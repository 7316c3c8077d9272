package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import ai.djl.util.Pair;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;

/**
 * A LoRA adapter of a {@link CausalLmBlock}, as Hugging Face PEFT's {@code LoraModel} adapts one:
 * a {@link LoraWeights} pair on each {@link Linear} or {@link Conv1D} projection whose checkpoint
 * module name {@link LoraConfig#targets} selects, the base weights untouched.
 *
 * <p>An adapter computes once it is {@linkplain #attach attached} under a name: every projection
 * it adapts then adds {@code (alpha / r) B A x} on the passes that {@linkplain #select select}
 * that name. A thread selects {@link #DEFAULT} until it selects otherwise, so a model with one
 * adapter attached as {@link #DEFAULT} simply computes with it; a server holding several adapters
 * on one base selects one per batch, or one per row of a batch ({@link #selectRows}), so that
 * requests for different adapters and for the base model decode together. Parameter names are the block's names ({@code
 * layers.0.self_attn.q_proj.lora_A.weight}); PEFT's file names put {@code base_model.model.} and
 * the checkpoint prefix before them.
 */
public final class LoraAdapter {

    /** The name PEFT gives an adapter, and the one a thread selects until it selects another. */
    public static final String DEFAULT = "default";

    private static final ThreadLocal<String> SELECTED = ThreadLocal.withInitial(() -> DEFAULT);
    /** A thread's adapter per row, or {@code null} while one adapter ({@link #SELECTED}) serves every row. */
    private static final ThreadLocal<LoraRows> ROWS = new ThreadLocal<>();

    private final CausalLmBlock model;
    private final LoraConfig config;
    private final Map<String, LoraWeights> modules;
    private final Map<String, Block> projections;
    private final Set<String> attachedAs = new LinkedHashSet<>();

    private LoraAdapter(
            CausalLmBlock model, LoraConfig config, Map<String, LoraWeights> modules, Map<String, Block> projections) {
        this.model = model;
        this.config = config;
        this.modules = Collections.unmodifiableMap(modules);
        this.projections = projections;
    }

    /**
     * Declares an adapter of {@code model}: a pair, without values yet, on each target projection.
     *
     * @param model the base model
     * @param config the adapter's rank, scale, dropout and targets
     * @param trainable whether its pairs record gradients
     * @return the adapter, neither initialized nor attached
     * @throws IllegalArgumentException if no projection of the model is a target, naming those it has
     */
    public static LoraAdapter declare(CausalLmBlock model, LoraConfig config, boolean trainable) {
        Map<String, Block> all = projections(model);
        Map<String, LoraWeights> modules = new LinkedHashMap<>();
        Map<String, Block> targets = new LinkedHashMap<>();
        for (Map.Entry<String, Block> e : all.entrySet()) {
            if (config.targets(moduleName(model, e.getKey()))) {
                ProjectionWeight weight = CausalLmBlock.projectionOf(e.getValue());
                Shape shape = model.declaredShapes().get(e.getKey() + ".weight");
                long in = weight.layout().in(shape);
                long out = weight.layout().out(shape);
                modules.put(e.getKey(), new LoraWeights(in, out, config, trainable));
                targets.put(e.getKey(), e.getValue());
            }
        }
        if (modules.isEmpty()) {
            Set<String> names = new TreeSet<>();
            for (String name : all.keySet()) {
                names.add(name.substring(name.lastIndexOf('.') + 1));
            }
            throw new IllegalArgumentException(
                    "no projection of the model matches target_modules "
                            + (config.targetPattern() != null ? config.targetPattern() : config.targetModules())
                            + "; its projections are " + names);
        }
        return new LoraAdapter(model, config, modules, targets);
    }

    /**
     * The targets a LoRA fine-tuning adapts unless told otherwise: the attention projections
     * ({@code q_proj, k_proj, v_proj, o_proj} for Llama, {@code c_attn} and {@code attn.c_proj}
     * for GPT-2, whose MLP also has a {@code c_proj}), each by the shortest name suffix that names
     * only attention projections.
     *
     * @param model the base model
     * @return target module names
     */
    public static List<String> attentionTargets(CausalLmBlock model) {
        Map<String, Block> all = projections(model);
        Map<String, Boolean> inAttention = new LinkedHashMap<>();
        collectAttention(model, "", false, inAttention);
        Set<String> targets = new LinkedHashSet<>();
        for (Map.Entry<String, Boolean> e : inAttention.entrySet()) {
            if (!e.getValue()) {
                continue;
            }
            String[] parts = e.getKey().split("\\.");
            for (int n = 1; n <= parts.length; n++) {
                String suffix = String.join(".", List.of(parts).subList(parts.length - n, parts.length));
                boolean onlyAttention = true;
                for (String other : all.keySet()) {
                    if (!inAttention.get(other) && (other.equals(suffix) || other.endsWith("." + suffix))) {
                        onlyAttention = false;
                        break;
                    }
                }
                if (onlyAttention) {
                    targets.add(suffix);
                    break;
                }
            }
        }
        return List.copyOf(targets);
    }

    /**
     * Gives every A its Kaiming-uniform values and every B zeros: a fresh adapter, which changes
     * no output until it trains.
     *
     * @param manager the manager that owns the arrays (the model's)
     * @param dataType their element type (the model's)
     * @return this adapter
     */
    public LoraAdapter initialize(NDManager manager, DataType dataType) {
        for (LoraWeights pair : modules.values()) {
            pair.initialize(manager, dataType);
        }
        return this;
    }

    /** @return the model this adapter adapts */
    public CausalLmBlock model() {
        return model;
    }

    /** @return its hyper-parameters */
    public LoraConfig config() {
        return config;
    }

    /** @return each adapted projection's pair, by the projection's block name (e.g. {@code layers.0.self_attn.q_proj}) */
    public Map<String, LoraWeights> modules() {
        return modules;
    }

    /**
     * @param blockName a module's dotted name in the block
     * @return its Hugging Face module name: the checkpoint prefix before it ({@code lm_head} has none)
     */
    public String moduleName(String blockName) {
        return moduleName(model, blockName);
    }

    private static String moduleName(CausalLmBlock model, String blockName) {
        return blockName.startsWith("lm_head") ? blockName : model.config().checkpointPrefix() + blockName;
    }

    /**
     * @return whether the adapted projections store their weights (in, out), GPT-2's {@code
     *     Conv1D}: PEFT's {@code fan_in_fan_out}
     */
    public boolean fanInFanOut() {
        for (Block projection : projections.values()) {
            if (CausalLmBlock.projectionOf(projection).layout() == ProjectionWeight.Layout.IN_OUT) {
                return true;
            }
        }
        return false;
    }

    /** @return every A and B under its block name, e.g. {@code layers.0.self_attn.q_proj.lora_A.weight} */
    public Map<String, Parameter> namedParameters() {
        Map<String, Parameter> out = new LinkedHashMap<>();
        for (Map.Entry<String, LoraWeights> e : modules.entrySet()) {
            out.put(e.getKey() + '.' + LoraWeights.A, e.getValue().a());
            out.put(e.getKey() + '.' + LoraWeights.B, e.getValue().b());
        }
        return Collections.unmodifiableMap(out);
    }

    /** @return the shape of every parameter of {@link #namedParameters()}, by the same names */
    public Map<String, Shape> declaredShapes() {
        Map<String, Shape> out = new LinkedHashMap<>();
        for (Map.Entry<String, LoraWeights> e : modules.entrySet()) {
            out.put(e.getKey() + '.' + LoraWeights.A, e.getValue().aShape());
            out.put(e.getKey() + '.' + LoraWeights.B, e.getValue().bShape());
        }
        return Collections.unmodifiableMap(out);
    }

    /**
     * Makes the model's passes that select {@code name} compute with this adapter.
     *
     * @param name the adapter's name ({@link #DEFAULT} for the one a thread uses unless told otherwise)
     * @return this adapter
     * @throws IllegalStateException if another adapter is attached under that name
     */
    public synchronized LoraAdapter attach(String name) {
        List<Block> done = new ArrayList<>();
        try {
            for (Map.Entry<String, LoraWeights> e : modules.entrySet()) {
                Block projection = projections.get(e.getKey());
                slotOf(projection).put(name, e.getValue());
                done.add(projection);
            }
        } catch (IllegalStateException e) {
            for (Block projection : done) {
                slotOf(projection).remove(name);
            }
            throw e;
        }
        attachedAs.add(name);
        return this;
    }

    /**
     * Stops the model's passes that select {@code name} from using this adapter.
     *
     * @param name a name it was attached under
     */
    public synchronized void detach(String name) {
        if (attachedAs.remove(name)) {
            for (Block projection : projections.values()) {
                slotOf(projection).remove(name);
            }
        }
    }

    /**
     * Adds {@code (alpha / r) B A} to each adapted projection's weight, in place, and detaches the
     * adapter: the model then computes what it computed with the adapter, without it.
     *
     * @throws IllegalStateException if a projection's weight is held compressed
     */
    public synchronized void merge() {
        for (Map.Entry<String, LoraWeights> e : modules.entrySet()) {
            ProjectionWeight weight = CausalLmBlock.projectionOf(projections.get(e.getKey()));
            if (weight.compressed() != null) {
                throw new IllegalStateException(
                        "cannot merge into " + moduleName(e.getKey()) + ": its weight is held as "
                                + weight.compressed().format().dtypeName() + "; load the base in float32");
            }
            NDArray w = weight.weightParameter().getArray();
            try (NDArray delta = e.getValue().weightDelta(weight.layout())) {
                w.addi(delta.toType(w.getDataType(), false));
            }
        }
        EngineForms.weightsChanged(); // the engine's fused copies hold the weights before the merge
        for (String name : List.copyOf(attachedAs)) {
            detach(name);
        }
    }

    /**
     * Selects the adapter this thread's forward passes compute with until the returned selection
     * is closed (which restores the previous one).
     *
     * @param name an attached adapter's name, or {@code null} for the base model alone
     * @return the selection, to close
     */
    public static Selection select(String name) {
        Selection selection = new Selection(SELECTED.get(), ROWS.get(), null);
        SELECTED.set(name);
        ROWS.remove();
        return selection;
    }

    /**
     * Selects an adapter for each row of the batches this thread's forward passes compute, until
     * the returned selection is closed (which restores the previous one): row {@code i} of every
     * projection's input (its first axis) gets the update of {@code adapterPerRow.get(i)}'s pair
     * on that projection, or none where that adapter does not adapt it or the name is {@code
     * null} (the model's own weights). Rows of one adapter compute what that adapter selected
     * alone computes, to rounding. Where no row names an adapter this is {@code select(null)};
     * where every row names the same one, its rows still take the per-row update (one native call
     * a projection on the CPU, {@link Kernels#loraUpdate}), that adapter being {@link #selected}
     * meanwhile. For inference: a training pass under it is refused. Keep the selection open over
     * the steps that run the same rows in the same order (what it computes per projection for the
     * batch is kept until it closes), and select anew when rows join, leave or move.
     *
     * @param adapterPerRow each row's adapter name, {@code null} for none
     * @return the selection, to close
     * @throws IllegalArgumentException if the list is empty
     */
    public static Selection selectRows(List<String> adapterPerRow) {
        if (adapterPerRow.isEmpty()) {
            throw new IllegalArgumentException("selectRows needs an adapter name (or null) for at least one row");
        }
        String first = adapterPerRow.get(0);
        boolean uniform = adapterPerRow.stream().allMatch(n -> Objects.equals(n, first));
        if (uniform && first == null) {
            return select(null);
        }
        LoraRows rows = new LoraRows(adapterPerRow);
        Selection selection = new Selection(SELECTED.get(), ROWS.get(), rows);
        if (uniform) {
            SELECTED.set(first); // what a request naming no adapter of its own computes with meanwhile
        }
        ROWS.set(rows);
        return selection;
    }

    /**
     * The adapter this thread's passes compute with when one serves every row: what a request
     * that names no adapter of its own computes with.
     *
     * @return the name selected last ({@link #DEFAULT} unless this thread selected otherwise), or
     *     {@code null} for the model's own weights
     */
    public static String selected() {
        return SELECTED.get();
    }

    /** @return this thread's adapter per row, or {@code null} while one adapter serves every row */
    static LoraRows selectedRows() {
        return ROWS.get();
    }

    /**
     * The names adapters are attached to {@code model} under.
     *
     * @param model a model
     * @return the names any of its projections computes with when selected, sorted
     */
    public static Set<String> attachedNames(CausalLmBlock model) {
        Set<String> names = new TreeSet<>();
        for (Block projection : projections(model).values()) {
            if (projection instanceof Linear || projection instanceof Conv1D) {
                names.addAll(slotOf(projection).names());
            }
        }
        return Collections.unmodifiableSet(names);
    }

    /**
     * A thread's adapter selection; closing it restores the one before (and frees what a
     * per-row selection kept for its batch).
     */
    public static final class Selection implements AutoCloseable {
        private final String previous;
        private final LoraRows previousRows;
        private final LoraRows rows;

        private Selection(String previous, LoraRows previousRows, LoraRows rows) {
            this.previous = previous;
            this.previousRows = previousRows;
            this.rows = rows;
        }

        @Override
        public void close() {
            SELECTED.set(previous);
            if (previousRows == null) {
                ROWS.remove();
            } else {
                ROWS.set(previousRows);
            }
            if (rows != null) {
                rows.close();
            }
        }
    }

    private static Map<String, Block> projections(CausalLmBlock model) {
        Map<String, Block> out = new LinkedHashMap<>();
        collect(model, "", out);
        return out;
    }

    private static void collect(Block block, String prefix, Map<String, Block> out) {
        int i = 0;
        for (Pair<String, Block> child : block.getChildren()) {
            i++;
            String name = prefix + ConfiguredBlock.childName(child.getKey(), i);
            if (CausalLmBlock.projectionOf(child.getValue()) != null) {
                out.put(name, child.getValue());
            } else {
                collect(child.getValue(), name + '.', out);
            }
        }
    }

    private static void collectAttention(Block block, String prefix, boolean inAttention, Map<String, Boolean> out) {
        int i = 0;
        for (Pair<String, Block> child : block.getChildren()) {
            i++;
            String name = prefix + ConfiguredBlock.childName(child.getKey(), i);
            if (CausalLmBlock.projectionOf(child.getValue()) != null) {
                out.put(name, inAttention);
            } else {
                collectAttention(child.getValue(), name + '.', inAttention || child.getValue() instanceof AttentionBlock, out);
            }
        }
    }

    private static LoraSlot slotOf(Block block) {
        return block instanceof Linear linear ? linear.loraSlot() : ((Conv1D) block).loraSlot();
    }
}
