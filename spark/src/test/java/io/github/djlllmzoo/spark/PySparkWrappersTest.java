package io.github.djlllmzoo.spark;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.spark.ml.param.BooleanParam;
import org.apache.spark.ml.param.FloatParam;
import org.apache.spark.ml.param.IntParam;
import org.apache.spark.ml.param.LongParam;
import org.apache.spark.ml.param.Param;
import org.apache.spark.ml.param.ParamPair;
import org.apache.spark.ml.param.StringArrayParam;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import py4j.reflection.MethodInvoker;
import py4j.reflection.ReflectionEngine;

/**
 * The PySpark wrappers ({@code src/main/python/djl_llm_zoo_spark}) against the JVM Transformers
 * they drive: the same Params (name, description, a type converter that yields the JVM Param's
 * type, the same defaults), read from the Python source with {@code ast} since pyspark is not
 * installed here; and each Param's value set the way PySpark sets it, through py4j's method
 * lookup with the Java types py4j makes of Python values, lands in the JVM as the Param's type.
 */
class PySparkWrappersTest {

    private static final Path MODULE = Path.of("src/main/python/djl_llm_zoo_spark/__init__.py");
    private static final Path READER = Path.of("src/test/resources/python_params.py");

    private static JsonObject python;

    @BeforeAll
    static void readThePythonParams() throws Exception {
        assumeTrue(onPath("python3"), "no python3 on the PATH");
        Process p = new ProcessBuilder("python3", READER.toString(), MODULE.toString()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "python3 finished");
        assertEquals(0, p.exitValue(), out);
        python = JsonParser.parseString(out).getAsJsonObject();
    }

    private static LlmTransformer jvm(String name) {
        return name.equals("LlmGenerator") ? new LlmGenerator() : new LlmScorer();
    }

    /** The converter PySpark applies before a value crosses to the JVM, by the JVM Param's class. */
    private static String converterFor(Param<?> param) {
        if (param instanceof IntParam || param instanceof LongParam) {
            return "toInt";
        } else if (param instanceof FloatParam) {
            return "toFloat";
        } else if (param instanceof BooleanParam) {
            return "toBoolean";
        } else if (param instanceof StringArrayParam) {
            return "toListString";
        }
        return "toString";
    }

    @ParameterizedTest
    @ValueSource(strings = {"LlmGenerator", "LlmScorer"})
    void pythonParamsMirrorTheJvmTransformersParams(String name) {
        JsonObject declared = python.getAsJsonObject(name).getAsJsonObject("params");
        LlmTransformer transformer = jvm(name);
        Map<String, String> expected = new TreeMap<>();
        Map<String, String> actual = new TreeMap<>();
        for (Param<?> param : transformer.params()) {
            expected.put(param.name(), param.doc() + " | " + converterFor(param));
        }
        for (Map.Entry<String, JsonElement> e : declared.entrySet()) {
            JsonObject p = e.getValue().getAsJsonObject();
            assertEquals(e.getKey(), p.get("attribute").getAsString(), "PySpark finds a Param by its attribute's name");
            actual.put(e.getKey(), p.get("doc").getAsString() + " | " + p.get("converter").getAsString());
        }
        assertEquals(expected, actual);
    }

    @ParameterizedTest
    @ValueSource(strings = {"LlmGenerator", "LlmScorer"})
    void pythonDefaultsAreTheJvmDefaults(String name) {
        JsonObject defaults = python.getAsJsonObject(name).getAsJsonObject("defaults");
        LlmTransformer transformer = jvm(name);
        Map<String, String> expected = new TreeMap<>();
        for (Param<?> param : transformer.params()) {
            if (transformer.hasDefault(param)) {
                Object value = transformer.getDefault(param).get();
                expected.put(param.name(), value instanceof String[] array ? List.of(array).toString() : value.toString());
            }
        }
        Map<String, String> actual = new TreeMap<>();
        for (Map.Entry<String, JsonElement> e : defaults.entrySet()) {
            JsonElement v = e.getValue();
            actual.put(e.getKey(), v.isJsonArray() ? jsonStrings(v).toString() : v.getAsJsonPrimitive().getAsString());
        }
        assertEquals(expected, actual);
    }

    @ParameterizedTest
    @ValueSource(strings = {"LlmGenerator", "LlmScorer"})
    void valuesSetFromPythonThroughPy4jKeepTheJvmParamsTypes(String name) throws Exception {
        JsonObject declared = python.getAsJsonObject(name).getAsJsonObject("params");
        LlmTransformer transformer = jvm(name);
        ReflectionEngine py4j = new ReflectionEngine();
        for (Map.Entry<String, JsonElement> e : declared.entrySet()) {
            Param<?> param = transformer.getParam(e.getKey());
            // What py4j receives for a converted Python value: int -> Integer, float -> Double,
            // bool -> Boolean, str -> String, list (auto-converted by PySpark's gateway) -> ArrayList.
            Object[] args = {switch (e.getValue().getAsJsonObject().get("converter").getAsString()) {
                case "toInt" -> 3;
                case "toFloat" -> 0.5;
                case "toBoolean" -> Boolean.TRUE;
                case "toListString" -> new ArrayList<>(List.of("THE END"));
                default -> "float32";
            }};
            MethodInvoker w = py4j.getMethod(param, "w", args);
            ParamPair<?> pair = (ParamPair<?>) py4j.invoke(param, w, args);
            transformer.set(pair);
            Object value = transformer.getOrDefault(param);
            if (param instanceof LongParam) {
                assertEquals(3L, assertInstanceOf(Long.class, value), e.getKey());
            } else if (param instanceof IntParam) {
                assertEquals(3, assertInstanceOf(Integer.class, value), e.getKey());
            } else if (param instanceof FloatParam) {
                assertEquals(0.5f, assertInstanceOf(Float.class, value), e.getKey());
            } else if (param instanceof BooleanParam) {
                assertEquals(true, assertInstanceOf(Boolean.class, value), e.getKey());
            } else if (param instanceof StringArrayParam) {
                assertArrayEquals(new String[] {"THE END"}, assertInstanceOf(String[].class, value), e.getKey());
            } else {
                assertEquals("float32", assertInstanceOf(String.class, value), e.getKey());
            }
        }
    }

    private static List<String> jsonStrings(JsonElement array) {
        List<String> out = new ArrayList<>();
        array.getAsJsonArray().forEach(x -> out.add(x.getAsString()));
        return out;
    }

    private static boolean onPath(String program) {
        return Stream.of(System.getenv().getOrDefault("PATH", "").split(File.pathSeparator))
                .anyMatch(dir -> !dir.isEmpty() && Files.isExecutable(Path.of(dir, program)));
    }
}
