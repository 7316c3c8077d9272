/**
 * <a href="https://docs.langchain4j.dev">LangChain4j</a>'s chat model interfaces over a model
 * loaded in this process, no HTTP between them: {@link
 * io.github.djlllmzoo.langchain4j.LlmZooChatModel} ({@code ChatModel}) and {@link
 * io.github.djlllmzoo.langchain4j.LlmZooStreamingChatModel} ({@code StreamingChatModel}), each made
 * by its builder from a {@code LocalModel}. Messages are rendered through the checkpoint's chat
 * template, tool calls are read in the family's syntax, and a required tool choice or a JSON
 * response format constrains decoding so the output parses by construction, so {@code AiServices}
 * with {@code @Tool} methods and record-returning methods run on them; {@link
 * io.github.djlllmzoo.langchain4j.ToolChoicePerTurn} chooses the tool choice per turn.
 *
 * @serial exclude
 */
package io.github.djlllmzoo.langchain4j;
