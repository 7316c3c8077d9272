package io.github.djlllmzoo.server;

import com.google.gson.JsonObject;
import io.github.djlllmzoo.chat.ToolCallSyntax;
import io.github.djlllmzoo.constrained.OutputConstraint;
import java.util.List;

/**
 * What a chat request asks of the reply's form: the tools offered (rendered into the prompt), the
 * syntax its tool calls are read in, and what decoding is constrained to.
 *
 * @param tools OpenAI function specifications to render (empty for none)
 * @param toolCalls the family's syntax to read calls from the reply in, or null to read none
 *     (no tools, or {@code tool_choice: none})
 * @param parallelToolCalls whether a reply may hold several calls ({@code parallel_tool_calls})
 * @param constraint what decoding is constrained to ({@code response_format}, or {@code
 *     tool_choice} required or named), or null
 */
record ChatOutput(
        List<JsonObject> tools,
        ToolCallSyntax toolCalls,
        boolean parallelToolCalls,
        OutputConstraint constraint) {

    /** Plain text: no tools, no constraint. */
    static final ChatOutput TEXT = new ChatOutput(List.of(), null, false, null);

    /** Copies the tools. */
    ChatOutput {
        tools = List.copyOf(tools);
    }
}
