package io.github.djlllmzoo.langchain4j;

import dev.langchain4j.model.chat.Capability;
import io.github.djlllmzoo.zoo.LocalModel;
import java.util.Set;

/**
 * What the blocking and the streaming chat models share: the engine over the loaded model, the
 * capabilities it declares (JSON-schema response formats, which it constrains decoding to) and
 * closing its predictor.
 */
abstract class LocalChatModel implements AutoCloseable {

    final LocalChatEngine engine;

    LocalChatModel(LocalModel model, String modelName) {
        this.engine = new LocalChatEngine(model, modelName);
    }

    /** @return JSON-schema response formats, decoded under the schema */
    public Set<Capability> supportedCapabilities() {
        return Set.of(Capability.RESPONSE_FORMAT_JSON_SCHEMA);
    }

    /** Frees the predictor; the caller keeps ownership of the model. */
    @Override
    public void close() {
        engine.close();
    }
}
