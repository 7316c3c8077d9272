package io.github.djlllmzoo.zoo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.CompressedWeight;
import io.github.djlllmzoo.blocks.DecoderModels;
import io.github.djlllmzoo.blocks.WeightFormat;
import io.github.djlllmzoo.blocks.config.Configs;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A model loaded with compressed weights compresses them straight from the checkpoint: the loader
 * never makes a float array of a weight it compresses, and the result is what compressing the
 * float32 model gives.
 */
class CompressedLoadingTest {

    private static final Path GOLDEN = Paths.get(System.getProperty("llmzoo.testdata", "../testdata"), "golden");

    @ParameterizedTest
    @CsvSource({
        "gpt2-tiny, int8", // float32 (in, out) Conv1D weights
        "gpt2-f16, float16", // float16 (in, out): widened and narrowed back
        "qwen2-tied-bf16, bfloat16", // bfloat16 (out, in): the checkpoint's bits
        "llama-gqa, int8",
        "qwen2-tied-bf16, float16"
    })
    void compressedWeightsLoadWithoutAFloatArrayAndEqualThoseOfTheFloat32Model(String name, String dtype)
            throws Exception {
        Path dir = GOLDEN.resolve(name);
        WeightFormat format = WeightFormat.parse(dtype);
        try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
            CausalLmBlock reference = DecoderModels.create(Configs.read(dir));
            CheckpointWeights.load(reference, dir, manager, DataType.FLOAT32);
            reference.compressWeights(format);
            Map<Parameter, CompressedWeight> expected = reference.compressedWeights();

            List<Shape> created = new ArrayList<>();
            CausalLmBlock direct = DecoderModels.create(Configs.read(dir));
            CheckpointWeights.load(direct, dir, counting(manager, created), DataType.FLOAT32, format);

            Map<String, Shape> shapes = direct.declaredShapes();
            Map<Parameter, CompressedWeight> loaded = direct.compressedWeights();
            long arrayElements = 0;
            for (Map.Entry<String, Parameter> e : direct.namedParameters().entrySet()) {
                if (loaded.containsKey(e.getValue())) {
                    assertFalse(e.getValue().isInitialized(), e.getKey() + " is held compressed only");
                } else {
                    arrayElements += shapes.get(e.getKey()).size();
                }
            }
            assertFalse(loaded.isEmpty());
            assertEquals(expected.size(), loaded.size());
            long createdElements = created.stream().mapToLong(Shape::size).sum();
            assertEquals(arrayElements, createdElements, "the loader made arrays of the uncompressed parameters only");

            List<Parameter> want = new ArrayList<>(reference.compressibleWeights().keySet());
            List<Parameter> have = new ArrayList<>(direct.compressibleWeights().keySet());
            for (int i = 0; i < want.size(); i++) {
                CompressedWeight a = expected.get(want.get(i));
                CompressedWeight b = loaded.get(have.get(i));
                assertEquals(a.format(), b.format());
                assertEquals(a.outFeatures(), b.outFeatures());
                assertEquals(a.inFeatures(), b.inFeatures());
                assertTrue(sameBytes(a.directBuffers()[0], b.directBuffers()[0]), "codes of weight " + i);
                assertTrue(sameBytes(a.directBuffers()[1], b.directBuffers()[1]), "scales of weight " + i);
            }
        }
    }

    /** A manager that records the shape of every array made through it, delegating to {@code real}. */
    private static NDManager counting(NDManager real, List<Shape> created) {
        return (NDManager)
                Proxy.newProxyInstance(
                        NDManager.class.getClassLoader(),
                        new Class<?>[] {NDManager.class},
                        (proxy, method, args) -> {
                            if (method.getName().startsWith("create") && args != null) {
                                for (Object arg : args) {
                                    if (arg instanceof Shape) {
                                        created.add((Shape) arg);
                                    }
                                }
                            }
                            try {
                                return method.invoke(real, args);
                            } catch (InvocationTargetException e) {
                                throw e.getCause();
                            }
                        });
    }

    private static boolean sameBytes(ByteBuffer a, ByteBuffer b) {
        if (a == null || b == null) {
            return a == b;
        }
        return a.duplicate().clear().equals(b.duplicate().clear());
    }
}
