package io.github.djlllmzoo.translators;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Caller overrides on top of a checkpoint's generation defaults, as the CLI and Spark apply them. */
class GenerationOverridesTest {

    private static GenerationConfig.Builder checkpoint() {
        return GenerationConfig.builder().maxNewTokens(160).doSample(false).temperature(0.7f).stopStrings(List.of("END"));
    }

    private static GenerationOverrides only(Integer maxNewTokens, Boolean doSample, Float temperature, Long seed) {
        return new GenerationOverrides(maxNewTokens, doSample, temperature, null, null, null, null, null, seed, null);
    }

    @Test
    void nullFieldsKeepTheCheckpointsValues() {
        GenerationConfig config = only(null, null, null, null).applyTo(checkpoint()).build();
        assertEquals(checkpoint().build(), config);
    }

    @Test
    void givenFieldsReplaceTheCheckpointsValues() {
        GenerationConfig config =
                new GenerationOverrides(20, null, null, 5, null, null, 1.2f, List.of("\n"), null, 2)
                        .applyTo(checkpoint())
                        .build();
        assertEquals(20, config.maxNewTokens());
        assertEquals(5, config.topK());
        assertEquals(1.2f, config.repetitionPenalty());
        assertEquals(List.of("\n"), config.stopStrings());
        assertEquals(2, config.numReturnSequences());
    }

    @Test
    void anySamplingControlTurnsSamplingOnUnlessDoSampleSaysOtherwise() {
        assertTrue(only(null, null, 0.9f, null).applyTo(checkpoint()).build().doSample(), "a temperature");
        assertTrue(only(null, null, null, 7L).applyTo(checkpoint()).build().doSample(), "a seed");
        assertFalse(only(null, false, 0.9f, null).applyTo(checkpoint()).build().doSample(), "doSample false wins");
        assertFalse(only(null, null, null, null).applyTo(checkpoint()).build().doSample(), "nothing given");
        assertTrue(only(null, true, null, null).applyTo(checkpoint()).build().doSample());
    }

    @Test
    void theStopListIsCopiedAndTheRecordSurvivesJavaSerialization() throws Exception {
        List<String> stops = new ArrayList<>(List.of("a"));
        GenerationOverrides overrides = new GenerationOverrides(null, null, null, null, null, null, null, stops, 3L, null);
        stops.add("b");
        assertEquals(List.of("a"), overrides.stopStrings());
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
            out.writeObject(overrides);
        }
        try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray()))) {
            assertEquals(overrides, in.readObject());
        }
    }
}
