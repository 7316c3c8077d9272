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
 * continuation with each switchable CPU kernel on and, listed in {@code -Dllmzoo.cpu.off}, off: the norms,
 * rotary embedding and activation ({@code -Dllmzoo.cpu.off=decodeOps}), LayerNorm ({@code
 * -Dllmzoo.cpu.off=layerNorm}), each core's share of a split product written into the whole ({@code
 * -Dllmzoo.cpu.off=placeColumns}), the prompt's attention ({@code
 * -Dllmzoo.cpu.off=prefillAttention}), q, k and v in one hand-over ({@code -Dllmzoo.cpu.off=projectAll}), the new
 * key and value written by the attention kernel ({@code -Dllmzoo.cpu.off=decodeAttention.writeCache}), the
 * gated MLP's fused products ({@code -Dllmzoo.cpu.off=gatedProduct}), the attention's and MLP's last
 * projections added into the residual stream ({@code -Dllmzoo.cpu.off=residualProduct}), with their bias
 * where they have one (GPT-2's {@code c_proj}, {@code -Dllmzoo.cpu.off=residualBias}), one row's product by a
 * wide (in, out) weight four weight rows at a time ({@code -Dllmzoo.cpu.off=fewRowProduct.fourRows}), a product's last
 * columns taken by whichever core is free ({@code -Dllmzoo.cpu.off=cpu.dynamicSplit}), dense query and key
 * heads rotated in place ({@code -Dllmzoo.cpu.off=rotateInPlace}), a decode step's norms computed into the
 * input of the products after them ({@code -Dllmzoo.cpu.off=normedProducts}), each then computed
 * the way it was before.
 */
class KernelSwitchesGoldenTest {

    /** The list of native kernels turned off (cpu-kernels' KernelSwitches). */
    private static final String OFF = "llmzoo.cpu.off";

    /** Each switch's name in {@code -Dllmzoo.cpu.off=cpu.off} and the words {@code CpuKernels.toString} names it by. */
    private static final String[][] SWITCHES = {
        {"decodeOps", "decode ops"},
        {"layerNorm", "layer norm"},
        {"placeColumns", "place columns"},
        {"prefillAttention", "prefill attention"},
        {"projectAll", "project all"},
        {"decodeAttention.writeCache", "attention writes cache"},
        {"gatedProduct", "gated product"},
        {"residualProduct", "residual product"},
        {"residualBias", "residual bias"},
        {"fewRowProduct.fourRows", "four weight rows"},
        {"cpu.dynamicSplit", "dynamic split"},
        {"rotateInPlace", "rotate in place"},
        {"normedProducts", "normed products"},
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
        System.setProperty(OFF, on ? "" : property);
        try (LocalModel model = LocalModel.load(golden.dir())) {
            GenerationConfig config =
                    GenerationConfig.builder().maxNewTokens(golden.greedyIds().length).eosTokenIds(List.of()).build();
            long[] ids = model.generator().generateGreedy(golden.promptIds(), config).tokenIds();
            String kernels = model.block().kernels().toString();
            assertTrue(kernels.contains(words + " " + (on ? "on" : "off")), kernels);
            assertArrayEquals(golden.greedyIds(), ids, name + ": greedy ids");
        } finally {
            System.clearProperty(OFF);
        }
    }
}
