package io.github.djlllmzoo.langchain4j;

import dev.langchain4j.model.chat.Capability;
import dev.langchain4j.model.chat.listener.ChatModelListener;
import dev.langchain4j.model.chat.request.ChatRequestParameters;
import java.util.List;
import java.util.Set;

/**
 * What {@link LlmZooChatModel} and {@link LlmZooStreamingChatModel} share: the chat they run,
 * the parameters every request starts from, the listeners, and JSON schemas as a capability.
 */
abstract class LocalChatModel {

    final LocalChat chat;
    private final ChatRequestParameters defaults;
    private final List<ChatModelListener> listeners;

    LocalChatModel(LocalChat chat, ChatRequestParameters defaults, List<ChatModelListener> listeners) {
        this.chat = chat;
        this.defaults = defaults;
        this.listeners = List.copyOf(listeners);
    }

    /** @return the parameters every request starts from (its own override them) */
    public ChatRequestParameters defaultRequestParameters() {
        return defaults;
    }

    /** @return the listeners told of each request and response */
    public List<ChatModelListener> listeners() {
        return listeners;
    }

    /** @return {@code RESPONSE_FORMAT_JSON_SCHEMA}: a schema constrains decoding */
    public Set<Capability> supportedCapabilities() {
        return Set.of(Capability.RESPONSE_FORMAT_JSON_SCHEMA);
    }
}
