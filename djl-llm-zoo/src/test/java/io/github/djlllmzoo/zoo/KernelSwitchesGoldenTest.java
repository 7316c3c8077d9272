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
 * Every golden case (sliding windows and Gemma's soft-capped scores among them) generates its greedy
 * continuation with each switchable CPU kernel on and, with its switch {@code false}, off: the norms,
 * rotary embedding and activation ({@code -Dllmzoo.decodeOps}), LayerNorm ({@code
 * -Dllmzoo.layerNorm}), each core's share of a split product written into the whole ({@code
 * -Dllmzoo.placeColumns}), the prompt's attention ({@code
 * -Dllmzoo.prefillAttention}), q, k and v in one hand-over ({@code -Dllmzoo.projectAll}), the new
 * key and value written by the attention kernel ({@code -Dllmzoo.decodeAttention.writeCache}), the
 * gated MLP's fused products ({@code -Dllmzoo.gatedProduct}), the attention's and MLP's last
 * projections added into the residual stream ({@code -Dllmzoo.residualProduct}), with their bias
 * where they have one (GPT-2's {@code c_proj}, {@code -Dllmzoo.residualBias}), one row's product by a
 * wide (in, out) weight four weight rows at a time ({@code -Dllmzoo.fewRowProduct.fourRows}), a product's last
 * columns taken by whichever core is free ({@code -Dllmzoo.cpu.dynamicSplit}), dense query and key
 * heads rotated in place ({@code -Dllmzoo.rotateInPlace}), a decode step's norms computed into the
 * input of the products after them ({@code -Dllmzoo.normedProducts}), each then computed
 * the way it was before.
 */
class KernelSwitchesGoldenTest {

    /** Each switch's system property and the words {@code CpuKernels.toString} names it by. */
    private static final String[][] SWITCHES = {
        {"llmzoo.decodeOps", "decode ops"},
        {"llmzoo.layerNorm", "layer norm"},
        {"llmzoo.placeColumns", "place columns"},
        {"llmzoo.prefillAttention", "prefill attention"},
        {"llmzoo.projectAll", "project all"},
        {"llmzoo.decodeAttention.writeCache", "attention writes cache"},
        {"llmzoo.gatedProduct", "gated product"},
        {"llmzoo.residualProduct", "residual product"},
        {"llmzoo.residualBias", "residual bias"},
        {"llmzoo.fewRowProduct.fourRows", "four weight rows"},
        {"llmzoo.cpu.dynamicSplit", "dynamic split"},
        {"llmzoo.rotateInPlace", "rotate in place"},
        {"llmzoo.normedProducts", "normed products"},
    };

    static Stream<Arguments> casesEachWay() {
        return GoldenCasesTest.cases().flatMap(name -> Stream.of(SWITCHES)
                .flatMap(s -> Stream.of(Arguments.of(name, s[0], s[1], true), Arguments.of(name, s[0], s[1], false))));
    }

    @ParameterizedTest(name = "{0}, {2} {3}")
    @MethodSource("casesEachWay")
    void greedyIdsEqualTheGoldenOnesWithEachKernelOnAndOff(String name, String property, String words, boolean on)
            throws Exception {
        GoldenCase golden = GoldenCase.load(name);
        System.setProperty(property, Boolean.toString(on));
        try (LocalModel model = LocalModel.load(golden.dir())) {
            GenerationConfig config =
                    GenerationConfig.builder().maxNewTokens(golden.greedyIds().length).eosTokenIds(List.of()).build();
            long[] ids = model.generator().generateGreedy(golden.promptIds(), config).tokenIds();
            String kernels = model.block().kernels().toString();
            assertTrue(kernels.contains(words + " " + (on ? "on" : "off")), kernels);
            assertArrayEquals(golden.greedyIds(), ids, name + ": greedy ids");
        } finally {
            System.clearProperty(property);
        }
    }
}
