package io.github.djlllmzoo.training;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.dataset.Batch;
import ai.djl.training.dataset.Record;
import io.github.djlllmzoo.translators.TextTokenizer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PackedTextDatasetTest {

    @TempDir Path temp;

    @Test
    void recordsAreWindowsSharingTheirBoundaryTokenWithLabelsShiftedByOne() {
        int[] tokens = IntStream.range(100, 121).toArray(); // 21 tokens
        int t = 4;
        PackedTextDataset dataset = PackedTextDataset.builder().setTokens(tokens).setSequenceLength(t).build();
        assertEquals((tokens.length - 1) / t, dataset.size());
        try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
            for (int i = 0; i < dataset.size(); i++) {
                Record record = dataset.get(manager, i);
                long[] input = record.getData().singletonOrThrow().toLongArray();
                long[] targets = record.getLabels().singletonOrThrow().toLongArray();
                for (int j = 0; j < t; j++) {
                    assertEquals(tokens[i * t + j], input[j], "input " + i + "," + j);
                    assertEquals(tokens[i * t + j + 1], targets[j], "target " + i + "," + j);
                }
            }
        }
    }

    @Test
    void batchesStackToBatchBySequenceLength() throws Exception {
        PackedTextDataset dataset =
                PackedTextDataset.builder().setTokens(IntStream.range(0, 50).toArray()).setSequenceLength(6).setSampling(3, false).build();
        try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
            Batch batch = dataset.getData(manager).iterator().next();
            assertEquals(new Shape(3, 6), batch.getData().singletonOrThrow().getShape());
            assertEquals(new Shape(3, 6), batch.getLabels().singletonOrThrow().getShape());
            batch.close();
        }
    }

    @Test
    void eachFileIsOneDocumentFollowedByEos() throws Exception {
        TinyModels.writeTokenizer(temp);
        Path first = Files.writeString(temp.resolve("a.txt"), "the cat sat");
        Path second = Files.writeString(temp.resolve("b.txt"), "a dog ran .");
        try (TextTokenizer tokenizer = TextTokenizer.load(temp)) {
            int eos = TinyModels.WORDS.indexOf("<eos>");
            int[] tokens = PackedTextDataset.tokenizeFiles(tokenizer, List.of(first, second), eos);
            List<Integer> expected = new ArrayList<>();
            for (String word : "the cat sat <eos> a dog ran . <eos>".split(" ")) {
                expected.add(TinyModels.WORDS.indexOf(word));
            }
            assertArrayEquals(expected.stream().mapToInt(Integer::intValue).toArray(), tokens);
        }
    }

    @Test
    void aSeparatorOutsideTheModelsVocabularyIsRejectedNamingTheArgument() throws Exception {
        TinyModels.writeTokenizer(temp);
        Path file = Files.writeString(temp.resolve("a.txt"), "the cat sat");
        try (TextTokenizer tokenizer = TextTokenizer.load(temp)) {
            TokenIdOutOfRangeException e =
                    assertThrows(
                            TokenIdOutOfRangeException.class,
                            () -> PackedTextDataset.tokenizeFiles(tokenizer, List.of(file), 50256, 24));
            assertEquals(50256, e.getTokenId());
            assertEquals(24, e.getVocabularySize());
            assertTrue(e.getMessage().contains("separator") && e.getMessage().contains("24 ids"), e.getMessage());
        }
    }

    @Test
    void withoutAVocabularySizeTheSeparatorMustBeAnIdOfTheTokenizer() throws Exception {
        TinyModels.writeTokenizer(temp);
        Path file = Files.writeString(temp.resolve("a.txt"), "the cat sat");
        try (TextTokenizer tokenizer = TextTokenizer.load(temp)) {
            int size = tokenizer.vocabularySize();
            TokenIdOutOfRangeException e =
                    assertThrows(
                            TokenIdOutOfRangeException.class,
                            () -> PackedTextDataset.tokenizeFiles(tokenizer, List.of(file), size));
            assertEquals(size, e.getVocabularySize());
            assertEquals(4, PackedTextDataset.tokenizeFiles(tokenizer, List.of(file), size - 1).length);
        }
    }

    @Test
    void aFileWhoseTextGivesAnIdOutsideTheVocabularyIsNamed() throws Exception {
        TinyModels.writeTokenizer(temp);
        Path fits = Files.writeString(temp.resolve("fits.txt"), "the cat");
        Path beyond = Files.writeString(temp.resolve("beyond.txt"), "the mat");
        int mat = TinyModels.WORDS.indexOf("mat");
        try (TextTokenizer tokenizer = TextTokenizer.load(temp)) {
            TokenIdOutOfRangeException e =
                    assertThrows(
                            TokenIdOutOfRangeException.class,
                            () -> PackedTextDataset.tokenizeFiles(tokenizer, List.of(fits, beyond), 0, mat));
            assertEquals(beyond.toString(), e.getSource());
            assertEquals(mat, e.getTokenId());
        }
    }

    @Test
    void theBuilderRejectsTokensOutsideTheVocabularySizeItIsGiven() {
        int[] tokens = {5, 7, 512, 3};
        TokenIdOutOfRangeException e =
                assertThrows(
                        TokenIdOutOfRangeException.class,
                        () -> PackedTextDataset.builder()
                                .setTokens(tokens)
                                .setSequenceLength(2)
                                .optVocabularySize(512)
                                .build());
        assertTrue(e.getMessage().contains("position 2") && e.getMessage().contains("512"), e.getMessage());
        assertEquals(1, PackedTextDataset.builder().setTokens(tokens).setSequenceLength(2).optVocabularySize(513).build().size());
        assertThrows(IllegalArgumentException.class, () -> PackedTextDataset.builder().optVocabularySize(0));
    }
}
