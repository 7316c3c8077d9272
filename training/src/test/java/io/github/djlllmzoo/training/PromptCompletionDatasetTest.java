package io.github.djlllmzoo.training;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.dataset.Batch;
import ai.djl.training.dataset.Record;
import io.github.djlllmzoo.translators.TextTokenizer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PromptCompletionDatasetTest {

    private static final long IGNORE = CausalLmLoss.IGNORE_INDEX;
    private static final int V = 12;
    private static final long PAD = 1;

    @TempDir Path temp;

    @Test
    void promptTokensAndPaddingDoNotContributeToTheLoss() throws Exception {
        long[][] prompts = {{2, 3, 4}, {5}};
        long[][] completions = {{6, 0}, {8, 9, 10, 11, 0}};
        PromptCompletionDataset dataset =
                PromptCompletionDataset.builder()
                        .setSequenceLength(16)
                        .optPadTokenId(PAD)
                        .addExample(prompts[0], completions[0])
                        .addExample(prompts[1], completions[1])
                        .setSampling(2, false)
                        .build();
        try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
            Batch batch = dataset.getData(manager).iterator().next();
            int t = prompts[1].length + completions[1].length - 1; // the longer example, minus its last token
            assertEquals(new Shape(2, t), batch.getData().singletonOrThrow().getShape());
            long[] inputs = batch.getData().singletonOrThrow().toLongArray();
            long[] labels = batch.getLabels().singletonOrThrow().toLongArray();
            for (int e = 0; e < 2; e++) {
                long[] ids = concat(prompts[e], completions[e]);
                for (int p = 0; p < t; p++) {
                    long input = p + 1 < ids.length ? ids[p] : PAD;
                    long label = p + 1 < ids.length && p + 1 >= prompts[e].length ? ids[p + 1] : IGNORE;
                    assertEquals(input, inputs[e * t + p], "input " + e + "," + p);
                    assertEquals(label, labels[e * t + p], "label " + e + "," + p);
                }
            }

            Random random = new Random(9);
            double[] logits = new double[2 * t * V];
            for (int i = 0; i < logits.length; i++) {
                logits[i] = 2 * random.nextGaussian();
            }
            NDArray logitArray = manager.create(logits, new Shape(2, t, V));
            double loss = new CausalLmLoss().evaluate(batch.getLabels(), new NDList(logitArray)).getDouble();
            // By hand: position p of example e predicts token p + 1; only completion tokens count.
            double sum = 0;
            int count = 0;
            for (int e = 0; e < 2; e++) {
                long[] ids = concat(prompts[e], completions[e]);
                for (int p = prompts[e].length - 1; p + 1 < ids.length; p++) {
                    sum -= logSoftmax(logits, (e * t + p) * V, (int) ids[p + 1]);
                    count++;
                }
            }
            assertEquals(completions[0].length + completions[1].length, count);
            assertEquals(sum / count, loss, CausalLmLossTest.float64Tolerance(logits, V, 2 * t));
            batch.close();
        }
    }

    @Test
    void jsonlPromptKeepsSpecialTokensAndTheCompletionEndsWithEos() throws Exception {
        TinyModels.writeTokenizer(temp);
        Path file =
                Files.writeString(
                        temp.resolve("pairs.jsonl"),
                        "{\"prompt\": \"the cat\", \"completion\": \"sat on the mat\"}\n\n"
                                + "{\"prompt\": \"a dog\", \"completion\": \"ran .\", \"id\": 7}\n");
        long eos = TinyModels.WORDS.indexOf("<eos>");
        try (TextTokenizer tokenizer = TextTokenizer.load(temp);
                NDManager manager = NDManager.newBaseManager("PyTorch")) {
            PromptCompletionDataset dataset =
                    PromptCompletionDataset.builder().setSequenceLength(32).addJsonl(file, tokenizer, eos).build();
            assertEquals(2, dataset.size());
            Record record = dataset.get(manager, 0);
            long[] ids = words("the cat sat on the mat <eos>");
            assertArrayEquals(Arrays.copyOf(ids, ids.length - 1), record.getData().singletonOrThrow().toLongArray());
            long[] labels = record.getLabels().singletonOrThrow().toLongArray();
            assertArrayEquals(new long[] {IGNORE}, Arrays.copyOf(labels, 1));
            assertArrayEquals(Arrays.copyOfRange(ids, 2, ids.length), Arrays.copyOfRange(labels, 1, labels.length));
            assertEquals(4 + 1 + 2 + 1, dataset.countedTokens());
        }
    }

    @Test
    void malformedJsonlNamesTheFileAndLine() throws Exception {
        TinyModels.writeTokenizer(temp);
        Path file =
                Files.writeString(
                        temp.resolve("bad.jsonl"),
                        "{\"prompt\": \"the\", \"completion\": \"cat\"}\n{\"prompt\": \"the\"}\n");
        try (TextTokenizer tokenizer = TextTokenizer.load(temp)) {
            InvalidTrainingDataException e =
                    assertThrows(
                            InvalidTrainingDataException.class,
                            () -> PromptCompletionDataset.builder().addJsonl(file, tokenizer, 0));
            assertEquals(2, e.getLine());
            assertTrue(e.getMessage().contains("bad.jsonl:2") && e.getMessage().contains("\"completion\""), e.getMessage());
            Path notJson = Files.writeString(temp.resolve("worse.jsonl"), "[1, 2]\n");
            InvalidTrainingDataException e2 =
                    assertThrows(
                            InvalidTrainingDataException.class,
                            () -> PromptCompletionDataset.builder().addJsonl(notJson, tokenizer, 0));
            assertTrue(e2.getMessage().contains("worse.jsonl:1"), e2.getMessage());
        }
    }

    @Test
    void examplesAreCutToTheWindowAndDroppedWhenNoCompletionTokenFits() {
        PromptCompletionDataset dataset =
                PromptCompletionDataset.builder()
                        .setSequenceLength(4)
                        .addExample(new long[] {2, 3}, new long[] {4, 5, 6, 7, 8})
                        .addExample(new long[] {2, 3, 4, 5, 6}, new long[] {7})
                        .build();
        assertEquals(1, dataset.size());
        assertEquals(1, dataset.droppedExamples());
        assertEquals(3, dataset.countedTokens()); // tokens 4, 5, 6 fit in the window of 4 + 1
    }

    private static long[] words(String text) {
        return Arrays.stream(text.split(" ")).mapToLong(TinyModels.WORDS::indexOf).toArray();
    }

    private static double logSoftmax(double[] logits, int offset, int target) {
        double max = Double.NEGATIVE_INFINITY;
        for (int v = 0; v < V; v++) {
            max = Math.max(max, logits[offset + v]);
        }
        double z = 0;
        for (int v = 0; v < V; v++) {
            z += Math.exp(logits[offset + v] - max);
        }
        return logits[offset + target] - max - Math.log(z);
    }

    private static long[] concat(long[] a, long[] b) {
        long[] out = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

    @Test
    void anEndOfSequenceIdOutsideTheVocabularyIsRejectedNamingTheFile() throws Exception {
        TinyModels.writeTokenizer(temp);
        Path file = Files.writeString(temp.resolve("pairs.jsonl"), "{\"prompt\": \"the cat\", \"completion\": \"sat\"}\n");
        try (TextTokenizer tokenizer = TextTokenizer.load(temp)) {
            TokenIdOutOfRangeException e =
                    assertThrows(
                            TokenIdOutOfRangeException.class,
                            () -> PromptCompletionDataset.builder().optVocabularySize(V).addJsonl(file, tokenizer, 50256));
            assertEquals(50256, e.getTokenId());
            assertEquals(V, e.getVocabularySize());
            assertTrue(e.getMessage().contains(file.toString()) && e.getMessage().contains("end-of-sequence"), e.getMessage());
            // Without a vocabulary size the tokenizer's bounds the id.
            assertThrows(
                    TokenIdOutOfRangeException.class,
                    () -> PromptCompletionDataset.builder().addJsonl(file, tokenizer, tokenizer.vocabularySize()));
        }
    }

    @Test
    void buildRejectsIdsOutsideTheVocabularyNamingTheExampleOrLine() throws Exception {
        TokenIdOutOfRangeException example =
                assertThrows(
                        TokenIdOutOfRangeException.class,
                        () -> PromptCompletionDataset.builder()
                                .setSequenceLength(8)
                                .optVocabularySize(V)
                                .addExample(new long[] {2}, new long[] {3, 0})
                                .addExample(new long[] {2}, new long[] {3, V})
                                .build());
        assertEquals("example 2 (completion)", example.getSource());

        TinyModels.writeTokenizer(temp);
        Path file = Files.writeString(temp.resolve("pairs.jsonl"), "{\"prompt\": \"the\", \"completion\": \"cat\"}\n\n{\"prompt\": \"the rug\", \"completion\": \"sat\"}\n");
        int rug = TinyModels.WORDS.indexOf("rug");
        try (TextTokenizer tokenizer = TextTokenizer.load(temp)) {
            TokenIdOutOfRangeException line =
                    assertThrows(
                            TokenIdOutOfRangeException.class,
                            () -> PromptCompletionDataset.builder()
                                    .setSequenceLength(8)
                                    .optVocabularySize(rug)
                                    .addJsonl(file, tokenizer, 0)
                                    .build());
            assertEquals(file + ":3 (prompt)", line.getSource());
            assertEquals(rug, line.getTokenId());
        }

        TokenIdOutOfRangeException pad =
                assertThrows(
                        TokenIdOutOfRangeException.class,
                        () -> PromptCompletionDataset.builder().setSequenceLength(8).optVocabularySize(V).optPadTokenId(V).build());
        assertTrue(pad.getMessage().contains("pad"), pad.getMessage());
    }
}
