package io.github.djlllmzoo.zoo.safetensors;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Reads the shared golden checkpoints ({@code ../shared/fixtures/golden}); skipped when absent.
 * Reference values were computed independently with numpy. The F16 case ({@code gpt2-f16}) does not
 * hold the F32 case's ({@code gpt2-tiny}) weights rounded to half precision: the two were generated
 * from different random draws, so only their layouts are compared.
 */
class SafeTensorsGoldenFixtureTest {

    private static NDManager manager;

    @BeforeAll
    static void createManager() {
        manager = NDManager.newBaseManager("PyTorch");
    }

    @AfterAll
    static void closeManager() {
        manager.close();
    }

    private static Path golden(String name) {
        String fixtures = System.getProperty("llmzoo.fixtures");
        Assumptions.assumeTrue(fixtures != null, "llmzoo.fixtures is not set");
        Path file = Path.of(fixtures, "golden", name, "model.safetensors");
        Assumptions.assumeTrue(Files.isRegularFile(file), file + " is absent");
        return file;
    }

    @Test
    void gpt2F16CheckpointLoadsAsFloat32WithReferenceValues() throws Exception {
        try (SafeTensorsReader reader = SafeTensorsReader.open(golden("gpt2-f16"));
                NDManager scope = manager.newSubManager()) {
            assertEquals(28, reader.tensors().size());
            for (TensorInfo info : reader.tensors().values()) {
                assertEquals(SafeTensorsDtype.F16, info.dtype(), info.name());
            }
            NDArray wte = reader.load("wte.weight", scope, DataType.FLOAT32);
            assertEquals(new Shape(512, 64), wte.getShape());
            float[] values = wte.toFloatArray();
            assertArrayEquals(
                    new float[] {
                        0.1251220703125f, 0.432861328125f, 0.191162109375f, -0.216064453125f
                    },
                    new float[] {values[0], values[1], values[2], values[3]});
            assertEquals(0.06317138671875f, values[values.length - 1]);
            // A binary16 subnormal (0x81C1) in the fixture.
            assertEquals(-2.676248550415039e-05f, values[3763]);
            assertEquals(-36.75855869054794, sum(values), summationTolerance(values));
        }
    }

    /** For every tensor, the Java F16 widening agrees bit for bit with PyTorch's own cast. */
    @Test
    void gpt2F16JavaWideningMatchesTheEngineCastForEveryTensor() throws Exception {
        try (SafeTensorsReader reader = SafeTensorsReader.open(golden("gpt2-f16"));
                NDManager scope = manager.newSubManager()) {
            for (String name : reader.tensors().keySet()) {
                float[] java = reader.toFloatArray(name);
                float[] engine =
                        reader.load(name, scope, DataType.FLOAT16)
                                .toType(DataType.FLOAT32, false)
                                .toFloatArray();
                assertArrayEquals(engine, java, name);
            }
        }
    }

    @Test
    void gpt2F16AndF32CheckpointsShareTheSameLayout() throws Exception {
        try (SafeTensorsReader f16 = SafeTensorsReader.open(golden("gpt2-f16"));
                SafeTensorsReader f32 = SafeTensorsReader.open(golden("gpt2-tiny"))) {
            assertEquals(List.copyOf(f32.tensors().keySet()), List.copyOf(f16.tensors().keySet()));
            for (TensorInfo info : f32.tensors().values()) {
                assertEquals(SafeTensorsDtype.F32, info.dtype(), info.name());
                assertArrayEquals(
                        info.shape(), f16.tensors().get(info.name()).shape(), info.name());
                assertEquals(
                        2 * f16.tensors().get(info.name()).byteSize(),
                        info.byteSize(),
                        info.name());
            }
        }
    }

    @Test
    void llamaBf16CheckpointLoadsAsFloat32WithReferenceValues() throws Exception {
        try (SafeTensorsReader reader = SafeTensorsReader.open(golden("llama-mqa-tied-bf16"));
                NDManager scope = manager.newSubManager()) {
            assertEquals(20, reader.tensors().size());
            assertFalse(reader.contains("lm_head.weight"), "tied embeddings: no lm_head.weight");
            assertArrayEquals(
                    new long[] {16, 64},
                    reader.tensors().get("model.layers.0.self_attn.k_proj.weight").shape());
            NDArray embed = reader.load("model.embed_tokens.weight", scope);
            assertEquals(DataType.FLOAT32, embed.getDataType());
            assertEquals(new Shape(512, 64), embed.getShape());
            float[] values = embed.toFloatArray();
            assertEquals(0.36328125f, values[0]);
            assertEquals(-0.1455078125f, values[1]);
            assertEquals(22.45211136341095, sum(values), summationTolerance(values));
        }
    }

    private static double sum(float[] values) {
        double sum = 0;
        for (float v : values) {
            sum += v;
        }
        return sum;
    }

    /**
     * The reference sum was taken in float64 in another order: two float64 sums of the same n values
     * differ by at most n times the unit roundoff of their absolute sum (Higham's gamma_n).
     */
    private static double summationTolerance(float[] values) {
        double absolute = 0;
        for (float v : values) {
            absolute += Math.abs(v);
        }
        return values.length * (Math.ulp(1.0) / 2) * absolute;
    }
}
