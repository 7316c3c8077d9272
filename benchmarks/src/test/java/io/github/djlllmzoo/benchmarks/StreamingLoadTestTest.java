package io.github.djlllmzoo.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The load client's request mix and its reading of streams (its run against a server: the server's LoadClientTest). */
class StreamingLoadTestTest {

    @Test
    void theMixSpansThePromptAndTokenRangesAndASeedRepeatsIt() {
        Random random = new Random(7);
        Random again = new Random(7);
        int shortest = Integer.MAX_VALUE;
        int longest = 0;
        int fewest = Integer.MAX_VALUE;
        int most = 0;
        int leaving = 0;
        int draws = 2000;
        for (int i = 0; i < draws; i++) {
            StreamingLoadTest.Draw draw = StreamingLoadTest.draw(random, 0.25);
            assertEquals(draw, StreamingLoadTest.draw(again, 0.25));
            int words = draw.prompt().split(" ").length;
            shortest = Math.min(shortest, words);
            longest = Math.max(longest, words);
            fewest = Math.min(fewest, draw.maxTokens());
            most = Math.max(most, draw.maxTokens());
            if (draw.leaveAfterChunks() > 0) {
                leaving++;
                assertTrue(draw.leaveAfterChunks() <= draw.maxTokens() / 2, draw.toString());
            }
        }
        assertTrue(shortest >= StreamingLoadTest.MIN_WORDS && shortest < StreamingLoadTest.MIN_WORDS + 5, "shortest " + shortest);
        assertTrue(longest <= StreamingLoadTest.MAX_WORDS && longest > StreamingLoadTest.MAX_WORDS - 5, "longest " + longest);
        assertEquals(StreamingLoadTest.MIN_TOKENS, fewest);
        assertEquals(StreamingLoadTest.MAX_TOKENS, most);
        // a quarter leave, within four binomial standard deviations (sqrt(2000 * 0.25 * 0.75) ~ 19)
        assertTrue(Math.abs(leaving - draws / 4) < 4 * 19.4, "leaving " + leaving);
    }

    private static StreamedAnswer read(String stream, int leaveAfter) throws Exception {
        return StreamedAnswer.read(new ByteArrayInputStream(stream.getBytes(StandardCharsets.UTF_8)), leaveAfter);
    }

    @Test
    void aStreamIsCleanOnlyWithAFinishReasonAndDone() throws Exception {
        String text = "data: {\"choices\":[{\"index\":0,\"text\":\"a\",\"finish_reason\":null}]}\n\n"
                + "data: {\"choices\":[{\"index\":0,\"text\":\"b\",\"finish_reason\":null}]}\n\n";
        String end = "data: {\"choices\":[{\"index\":0,\"text\":\"\",\"finish_reason\":\"length\"}]}\n\n";
        String usage = "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":5}}\n\n";
        StreamedAnswer clean = read(text + end + usage + "data: [DONE]\n\n", 0);
        assertTrue(clean.clean());
        assertEquals(5, clean.tokens(), "the usage chunk's count");
        assertEquals(2, read(text + end + "data: [DONE]\n\n", 0).tokens(), "the text chunks counted");
        assertEquals(false, read(text + "data: [DONE]\n\n", 0).clean());
        assertEquals(false, read(text + end, 0).clean());
        StreamedAnswer error = read(text + "data: {\"error\":{\"message\":\"x\"}}\n\n", 0);
        assertEquals(false, error.clean());
        assertTrue(error.problem().startsWith("error event"), error.problem());
        StreamedAnswer left = read(text + end + "data: [DONE]\n\n", 1);
        assertTrue(left.disconnected());
    }
}
