package io.github.djlllmzoo.training;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

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
}
