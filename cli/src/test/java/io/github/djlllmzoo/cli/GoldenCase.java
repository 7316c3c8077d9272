package io.github.djlllmzoo.cli;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;

/**
 * A golden checkpoint of the test data ({@code testdata/golden/NAME}, or under the {@code
 * llmzoo.testdata} property): its directory and the reference answers of its {@code golden.json}.
 *
 * @param dir the checkpoint directory
 * @param json the contents of {@code golden.json}
 */
record GoldenCase(Path dir, JsonObject json) {

    static Path dir(String name) {
        return Paths.get(System.getProperty("llmzoo.testdata", "../testdata"), "golden", name);
    }

    static GoldenCase load(String name) throws IOException {
        Path dir = dir(name);
        return new GoldenCase(
                dir,
                JsonParser.parseString(Files.readString(dir.resolve("golden.json"), StandardCharsets.UTF_8))
                        .getAsJsonObject());
    }

    /** @return the token ids under {@code key} (such as {@code prompt_ids}) */
    long[] ids(String key) {
        return longs(json.getAsJsonArray(key));
    }

    /** @return the token ids under {@code key}, comma-separated as the command line takes them */
    String idList(String key) {
        return TokenIds.join(ids(key));
    }

    /** @return the numbers under {@code key} (such as {@code prompt_logprobs}) */
    double[] numbers(String key) {
        JsonArray array = json.getAsJsonArray(key);
        double[] out = new double[array.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = array.get(i).getAsDouble();
        }
        return out;
    }

    /** @return the integers of a JSON array */
    static long[] longs(JsonArray array) {
        long[] out = new long[array.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = array.get(i).getAsLong();
        }
        return out;
    }
}
