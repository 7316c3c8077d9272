package io.github.djlllmzoo.translators;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.djlllmzoo.constrained.OutputConstraint;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * One sequence advanced by hand, without a model: logits made here, the real GPT-2 tokenizer for
 * text, stop strings and constraints (skipped without the fixture).
 */
class SequenceStateTest {

    private static final int VOCAB = TinyModels.GPT2_VOCAB;
    private static final int EOS = TinyModels.GPT2_EOS;
    private static final long[] PROMPT = {464, 3290}; // any ids of the vocabulary

    @AutoClose private static TextTokenizer tokenizer;

    @BeforeAll
    static void load() throws Exception {
        tokenizer = TextTokenizer.load(TinyModels.gpt2TokenizerDir());
    }

    /** Logits whose most likely token is {@code token}. */
    private static float[] favouring(long token) {
        float[] logits = new float[VOCAB];
        logits[(int) token] = 10f;
        return logits;
    }

    private static GenerationConfig.Builder greedy(int maxNewTokens) {
        return GenerationConfig.builder().greedy().maxNewTokens(maxNewTokens).eosTokenIds(List.of(EOS));
    }

    private static SequenceState single(GenerationConfig config, GenerationListener listener) {
        List<SequenceState> states =
                SequenceState.builder(PROMPT, config).tokenizer(tokenizer).listener(listener).build();
        assertEquals(1, states.size());
        return states.get(0);
    }

    /** Hears everything a sequence reports. */
    private static final class Recorder implements GenerationListener {
        final StringBuilder text = new StringBuilder();
        final List<Long> tokens = new ArrayList<>();
        final List<FinishReason> ends = new ArrayList<>();
        boolean cancelled;

        @Override
        public void onText(int sequence, String piece) {
            text.append(piece);
        }

        @Override
        public void onToken(int sequence, long tokenId) {
            tokens.add(tokenId);
        }

        @Override
        public void onFinish(int sequence, FinishReason reason) {
            ends.add(reason);
        }

        @Override
        public boolean isCancelled() {
            return cancelled;
        }
    }

    @Test
    void endsOnEosWithoutKeepingIt() {
        long hello = tokenizer.encode("Hello")[0];
        Recorder heard = new Recorder();
        SequenceState state = single(greedy(10).build(), heard);
        assertFalse(state.advance(favouring(hello)));
        assertEquals(hello, state.lastToken());
        assertTrue(state.advance(favouring(EOS)));
        assertEquals(FinishReason.EOS, state.finishReason());
        Completion completion = state.completion();
        assertArrayEquals(new long[] {hello}, completion.tokenIds());
        assertEquals("Hello", completion.text());
        assertEquals(List.of(hello), heard.tokens, "the EOS token is not reported as a token");
        assertEquals("Hello", heard.text.toString());
        assertEquals(List.of(FinishReason.EOS), heard.ends);
        assertThrows(IllegalStateException.class, () -> state.advance(favouring(hello)));
    }

    @Test
    void aStopStringEndsTheSequenceAndItsTextBeforeIt() {
        long[] ids = tokenizer.encode("Hello world, and more");
        Recorder heard = new Recorder();
        SequenceState state = single(greedy(20).stopStrings(List.of("lo wo")).build(), heard);
        int fed = 0;
        while (!state.advance(favouring(ids[fed]))) {
            fed++;
        }
        assertEquals(FinishReason.STOP, state.finishReason());
        assertTrue(fed + 1 < ids.length, "ended at the token that completed the stop string");
        Completion completion = state.completion();
        assertEquals("Hel", completion.text());
        assertEquals("Hel", heard.text.toString(), "streamed text never shows the stop string");
        assertEquals(fed + 1, completion.tokenIds().length);
    }

    @Test
    void endsOnItsBudgetAndOnTheContextWindow() {
        long hello = tokenizer.encode("Hello")[0];
        SequenceState byBudget = single(greedy(3).build(), null);
        assertEquals(3, byBudget.budget());
        assertFalse(byBudget.advance(favouring(hello)));
        assertFalse(byBudget.advance(favouring(hello)));
        assertTrue(byBudget.advance(favouring(hello)));
        assertEquals(FinishReason.LENGTH, byBudget.finishReason());
        assertEquals(3, byBudget.completion().tokenIds().length);

        SequenceState byWindow =
                SequenceState.builder(PROMPT, greedy(10).build()).contextWindow(PROMPT.length + 1).build().get(0);
        assertEquals(1, byWindow.budget());
        assertTrue(byWindow.advance(favouring(hello)));
        assertEquals(FinishReason.LENGTH, byWindow.finishReason());
        assertNull(byWindow.completion().text(), "no tokenizer, no text");

        SequenceState noRoom =
                SequenceState.builder(PROMPT, greedy(10).build()).contextWindow(PROMPT.length).build().get(0);
        assertTrue(noRoom.endIfDue(), "a sequence with no room ends before its first step");
        assertEquals(FinishReason.LENGTH, noRoom.finishReason());
    }

    @Test
    void aCancelledRequestEndsAtTheNextStep() {
        Recorder heard = new Recorder();
        SequenceState state = single(greedy(10).build(), heard);
        assertFalse(state.endIfDue());
        assertFalse(state.advance(favouring(tokenizer.encode("Hello")[0])));
        heard.cancelled = true;
        assertTrue(state.endIfDue());
        assertEquals(FinishReason.CANCELLED, state.finishReason());
        assertEquals(1, state.completion().tokenIds().length, "it keeps what came before");
        assertEquals(List.of(FinishReason.CANCELLED), heard.ends);
    }

    @Test
    void aConstrainedSequenceOnlyTakesTokensThatKeepItsOutputValid() {
        GenerationConfig config = greedy(10).optConstraint(OutputConstraint.regex("[0-9]{2}")).build();
        long hello = tokenizer.encode("Hello")[0];
        float[] wantsHello = favouring(hello);
        float[] before = wantsHello.clone();

        SequenceState fresh = single(config, null);
        assertThrows(IllegalArgumentException.class, () -> fresh.accept((int) hello, wantsHello));
        assertThrows(IllegalArgumentException.class, () -> fresh.accept(EOS, wantsHello), "incomplete output");

        SequenceState state = single(config, null);
        int steps = 0;
        while (!state.advance(wantsHello)) {
            assertTrue(++steps < 10, "the constraint ends the output");
        }
        assertArrayEquals(before, wantsHello, "the caller's logits are not modified");
        assertEquals(FinishReason.STOP, state.finishReason(), "nothing may follow two digits");
        Completion completion = state.completion();
        assertTrue(completion.text().matches("[0-9]{2}"), completion.text());
    }

    @Test
    void logprobsAreTheModelsBeforeAnyProcessing() {
        long hello = tokenizer.encode("Hello")[0];
        GenerationConfig config =
                greedy(1).repetitionPenalty(1.5f).returnLogprobs(true).topLogprobs(2).build();
        SequenceState state = single(config, null);
        float[] logits = favouring(hello);
        logits[7] = 9f;
        assertTrue(state.advance(logits));
        Completion completion = state.completion();
        assertEquals(Sampler.logProbability(logits, (int) hello), completion.logprobs()[0], 1e-6f);
        List<TokenLogprob> top = completion.topLogprobs().get(0);
        assertEquals(2, top.size());
        assertEquals(hello, top.get(0).tokenId());
        assertEquals(7, top.get(1).tokenId());
        assertEquals(Sampler.logProbability(logits, 7), top.get(1).logprob(), 1e-6f);
    }

    @Test
    void onlyAPlainGreedySequenceLetsItsTokenBePickedWhereTheLogitsAre() {
        assertTrue(single(greedy(4).build(), null).picksPlainArgmax());
        assertFalse(single(greedy(4).returnLogprobs(true).build(), null).picksPlainArgmax(), "log-probabilities read the logits");
        assertFalse(single(greedy(4).repetitionPenalty(1.5f).build(), null).picksPlainArgmax(), "a processor changes them");
        assertFalse(single(GenerationConfig.builder().doSample(true).temperature(0.7f).seed(3L).maxNewTokens(4).eosTokenIds(List.of(EOS)).build(), null)
                .picksPlainArgmax(), "sampling draws from them");
    }

    @Test
    void acceptingTheArgmaxWithoutLogitsDoesWhatAdvancingDoes() {
        long hello = 15496;
        Recorder heard = new Recorder();
        Recorder advanced = new Recorder();
        SequenceState picked = single(greedy(3).build(), heard);
        SequenceState plain = single(greedy(3).build(), advanced);
        for (int i = 0; i < 3; i++) {
            picked.accept(Sampler.argmax(favouring(hello + i)), null);
            plain.advance(favouring(hello + i));
        }
        assertArrayEquals(plain.completion().tokenIds(), picked.completion().tokenIds());
        assertEquals(advanced.text.toString(), heard.text.toString());
        assertEquals(advanced.ends, heard.ends);
    }
}
