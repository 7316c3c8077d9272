package io.github.djlllmzoo.zoo;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.djlllmzoo.translators.GenerationConfig;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every golden case generates its greedy continuation with a decode step's norms, rotary embedding
 * and activation both by the CPU kernels and, with {@code -Dllmzoo.decodeOps=false}, by the
 * engine's operations.
 */
class DecodeOpsGoldenTest {

    static Stream<Arguments> casesBothWays() {
        return GoldenCasesTest.cases().flatMap(name -> Stream.of(Arguments.of(name, true), Arguments.of(name, false)));
    }

    @ParameterizedTest(name = "{0}, decode ops {1}")
    @MethodSource("casesBothWays")
    void greedyIdsEqualTheGoldenOnesWithTheDecodeOpsOnAndOff(String name, boolean decodeOps) throws Exception {
        GoldenCase golden = GoldenCase.load(name);
        System.setProperty("llmzoo.decodeOps", Boolean.toString(decodeOps));
        try (LocalModel model = LocalModel.load(golden.dir())) {
            GenerationConfig config =
                    GenerationConfig.builder().maxNewTokens(golden.greedyIds().length).eosTokenIds(List.of()).build();
            long[] ids = model.generator().generateGreedy(golden.promptIds(), config).tokenIds();
            String kernels = model.block().kernels().toString();
            assertTrue(kernels.contains("decode ops " + (decodeOps ? "on" : "off")), kernels);
            assertArrayEquals(golden.greedyIds(), ids, name + ": greedy ids");
        } finally {
            System.clearProperty("llmzoo.decodeOps");
        }
    }
}
