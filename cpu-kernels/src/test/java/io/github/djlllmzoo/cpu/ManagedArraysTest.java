package io.github.djlllmzoo.cpu;

import ai.djl.ndarray.NDManager;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/** Tests that make their arrays in one PyTorch manager per test, closed after it. */
abstract class ManagedArraysTest {

    /** The test's manager. */
    protected NDManager manager;

    @BeforeEach
    void openManager() {
        manager = NDManager.newBaseManager("PyTorch");
    }

    @AfterEach
    void closeManager() {
        manager.close();
    }
}
