package io.github.djlllmzoo.server;

import io.github.djlllmzoo.chat.ToolCallSyntax;
import io.github.djlllmzoo.translators.GenerationConfig;

/**
 * A validated generation request of either route: what to generate and how to answer.
 *
 * @param endpoint the route it came on
 * @param promptIds the prompt token ids (the rendered conversation for chat)
 * @param config how to generate
 * @param stream whether to answer with server-sent events
 * @param includeUsage whether a streamed answer ends with a usage chunk ({@code
 *     stream_options.include_usage})
 * @param toolCalls the syntax the reply's tool calls are read in, or null to read none
 * @param parallelToolCalls whether the reply may hold several tool calls (else the first is kept)
 */
public record CompletionCall(
        Endpoint endpoint,
        long[] promptIds,
        GenerationConfig config,
        boolean stream,
        boolean includeUsage,
        ToolCallSyntax toolCalls,
        boolean parallelToolCalls) {

    /**
     * Copies the prompt.
     *
     * @param endpoint the route it came on
     * @param promptIds the prompt token ids (the rendered conversation for chat)
     * @param config how to generate
     * @param stream whether to answer with server-sent events
     * @param includeUsage whether a streamed answer ends with a usage chunk ({@code stream_options.include_usage})
     * @param toolCalls the syntax the reply's tool calls are read in, or null to read none
     * @param parallelToolCalls whether the reply may hold several tool calls (else the first is kept)
     */
    public CompletionCall {
        promptIds = promptIds.clone();
    }

    /** @return a copy of the prompt ids */
    @Override
    public long[] promptIds() {
        return promptIds.clone();
    }
}
