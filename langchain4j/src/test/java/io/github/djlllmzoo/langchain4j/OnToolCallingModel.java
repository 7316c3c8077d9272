package io.github.djlllmzoo.langchain4j;

import io.github.djlllmzoo.zoo.LocalModel;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;

/**
 * The fixture of the test classes that run on {@link ToolCallingCheckpoint}'s model: loaded once
 * per class into a temporary directory and closed after its last test.
 */
abstract class OnToolCallingModel {

    @TempDir static Path dir;

    static LocalModel model;

    @BeforeAll
    static void load() throws Exception {
        model = LocalModel.load(ToolCallingCheckpoint.write(dir.resolve("qwen-template-gpt2")));
    }

    @AfterAll
    static void close() {
        if (model != null) {
            model.close();
            model = null;
        }
    }
}
