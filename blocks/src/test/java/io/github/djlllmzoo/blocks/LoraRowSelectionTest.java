package io.github.djlllmzoo.blocks;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * An adapter per row ({@link LoraAdapter#selectRows}): each row of a batch computes what its own
 * adapter, selected for the whole batch, computes for it alone.
 */
class LoraRowSelectionTest {

    private static final int TOKENS = 4;
    /** Three rows: one adapter adapting every projection, the base model, one adapting attention only. */
    private static final List<String> ROWS = Arrays.asList("every", null, "attention");

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"llama", "gpt2"})
    void eachRowComputesWhatItsAdapterSelectedAloneComputes(String family) throws Exception {
        try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
            CausalLmBlock model = adapted(family, manager);
            NDArray ids = ids(manager);
            NDArray mixed;
            try (LoraAdapter.Selection rows = LoraAdapter.selectRows(ROWS)) {
                mixed = model.forward(null, ids, null, null, null, false, false);
            }
            float[][] alone = new float[ROWS.size()][];
            for (int r = 0; r < ROWS.size(); r++) {
                try (LoraAdapter.Selection one = LoraAdapter.select(ROWS.get(r))) {
                    alone[r] = model.forward(null, ids.get(new NDIndex("{}:{}", r, r + 1)), null, null, null, false,
                            false).toFloatArray();
                }
                float[] row = mixed.get(r).toFloatArray();
                // the same sums in another order (the rows' pairs concatenated, others masked to zero)
                float bound = RoundingBound.ofLogits(model.config(), TOKENS, alone[r]);
                for (int i = 0; i < row.length; i++) {
                    assertEquals(alone[r][i], row[i], bound, family + " row " + r + " (" + ROWS.get(r) + ") logit " + i);
                }
            }
            for (int r = 0; r < ROWS.size(); r++) {
                for (int s = r + 1; s < ROWS.size(); s++) {
                    assertFalse(Arrays.equals(alone[r], alone[s]), "the adapters of rows " + r + " and " + s + " differ");
                }
            }
        }
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"llama", "gpt2"})
    void anAdapterForEveryRowComputesWhatSelectingItComputesToRounding(String family) throws Exception {
        try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
            CausalLmBlock model = adapted(family, manager);
            NDArray ids = ids(manager);
            float[] selected;
            try (LoraAdapter.Selection one = LoraAdapter.select("every")) {
                selected = model.forward(null, ids, null, null, null, false, false).toFloatArray();
            }
            List<String> every = Arrays.asList("every", "every", "every");
            try (LoraAdapter.Selection rows = LoraAdapter.selectRows(every)) {
                assertEquals(every, LoraAdapter.selectedRows().names(), "the rows take the per-row update");
                assertEquals("every", LoraAdapter.selected(), "a request naming no adapter gets the rows' one");
                float[] perRow = model.forward(null, ids, null, null, null, false, false).toFloatArray();
                float bound = RoundingBound.ofLogits(model.config(), (int) ids.getShape().get(1), selected);
                for (int i = 0; i < selected.length; i++) {
                    assertEquals(selected[i], perRow[i], bound, "logit " + i);
                }
            }
            assertNull(LoraAdapter.selectedRows());
            assertEquals(LoraAdapter.DEFAULT, LoraAdapter.selected());
        }
    }

    @Test
    void noAdapterForAnyRowIsTheModelsOwnWeights() {
        try (LoraAdapter.Selection rows = LoraAdapter.selectRows(Arrays.asList(null, null))) {
            assertNull(LoraAdapter.selectedRows());
            assertNull(LoraAdapter.selected());
        }
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"llama", "gpt2"})
    void closingTheSelectionFreesWhatItKeptAndRestoresThePreviousOne(String family) throws Exception {
        try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
            CausalLmBlock model = adapted(family, manager);
            try (NDManager warmUp = manager.newSubManager(); LoraAdapter.Selection rows = LoraAdapter.selectRows(ROWS)) {
                model.forward(null, ids(warmUp), null, null, null, false, false); // the model's own tables, made once
            }
            try (LoraAdapter.Selection outer = LoraAdapter.select("attention")) {
                int before = manager.getManagedArrays().size();
                try (NDManager pass = manager.newSubManager();
                        LoraAdapter.Selection rows = LoraAdapter.selectRows(ROWS)) {
                    model.forward(null, ids(pass), null, null, null, false, false);
                    pass.close();
                    assertTrue(manager.getManagedArrays().size() > before, "the selection keeps its batch's pairs");
                    assertEquals(ROWS, LoraAdapter.selectedRows().names());
                }
                assertEquals(before, manager.getManagedArrays().size(), "arrays left after the selection closed");
                assertNull(LoraAdapter.selectedRows());
                assertEquals("attention", LoraAdapter.selected());
            }
            assertEquals(LoraAdapter.DEFAULT, LoraAdapter.selected());
        }
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"llama", "gpt2"})
    void aTrainingPassOrABatchOfAnotherSizeIsRefused(String family) throws Exception {
        try (NDManager manager = NDManager.newBaseManager("PyTorch");
                LoraAdapter.Selection rows = LoraAdapter.selectRows(ROWS)) {
            CausalLmBlock model = adapted(family, manager);
            IllegalStateException training = assertThrows(IllegalStateException.class,
                    () -> model.forward(null, ids(manager), null, null, null, false, true));
            assertTrue(training.getMessage().contains("train one adapter at a time"), training.getMessage());
            NDArray twoRows = ids(manager).get(new NDIndex("0:2"));
            IllegalStateException size = assertThrows(IllegalStateException.class,
                    () -> model.forward(null, twoRows, null, null, null, false, false));
            assertTrue(size.getMessage().contains("3 rows") && size.getMessage().contains("(2, 4"), size.getMessage());
        }
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"llama", "gpt2"})
    void theAttachedNamesAreEveryAdaptersName(String family) throws Exception {
        try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
            assertEquals(List.of("attention", "every"), List.copyOf(LoraAdapter.attachedNames(adapted(family, manager))));
        }
    }

    @Test
    void aProjectionOfRowsWithoutATimeAxisAddsEachRowsOwnUpdate() {
        try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
            Linear linear = new Linear(6, 5, true, 0.02f);
            linear.weight().setArray(manager.randomNormal(new Shape(5, 6)));
            linear.getParameters().get("bias").setArray(manager.randomNormal(new Shape(5)));
            for (String name : List.of("every", "attention")) {
                LoraWeights pair = new LoraWeights(6, 5, new LoraConfig(name.length() % 3 + 1, 4, 0, List.of("p")), false);
                pair.initialize(manager, DataType.FLOAT32);
                pair.b().getArray().addi(manager.randomNormal(0, 0.5f, pair.bShape(), DataType.FLOAT32));
                linear.loraSlot().put(name, pair);
            }
            NDArray x = manager.randomNormal(new Shape(ROWS.size(), 6)); // (B, in): one position per row
            float[] mixed;
            try (LoraAdapter.Selection rows = LoraAdapter.selectRows(ROWS)) {
                mixed = linear.forward(null, x, false).toFloatArray();
            }
            for (int r = 0; r < ROWS.size(); r++) {
                try (LoraAdapter.Selection one = LoraAdapter.select(ROWS.get(r))) {
                    float[] alone = linear.forward(null, x.get(new NDIndex("{}:{}", r, r + 1)), false).toFloatArray();
                    // sums of 6 products and 1 to 3 rank terms, in another order: a few float32 ulps of values near 10
                    assertArrayEquals(alone, Arrays.copyOfRange(mixed, r * 5, (r + 1) * 5), 1e-4f, "row " + r);
                }
            }
        }
    }

    /** The family's test model with two adapters of different ranks, trained (random B), attached. */
    private static CausalLmBlock adapted(String family, NDManager manager) throws Exception {
        CausalLmBlock model = LoraAdapterTest.model(family, manager);
        List<String> every = family.equals("gpt2")
                ? List.of("c_attn", "c_proj", "c_fc")
                : List.of("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj");
        attach(model, manager, new LoraConfig(2, 6, 0, every), "every");
        attach(model, manager, new LoraConfig(4, 4, 0, LoraAdapter.attentionTargets(model)), "attention");
        return model;
    }

    private static void attach(CausalLmBlock model, NDManager manager, LoraConfig config, String name) {
        LoraAdapter adapter = LoraAdapter.declare(model, config, false).initialize(manager, DataType.FLOAT32);
        for (LoraWeights pair : adapter.modules().values()) {
            pair.b().getArray().addi(manager.randomNormal(0, 0.5f, pair.bShape(), DataType.FLOAT32));
        }
        adapter.attach(name);
    }

    private static NDArray ids(NDManager manager) {
        return manager.create(new long[] {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8}, new Shape(ROWS.size(), TOKENS));
    }
}
