/**
 * Chat templates and tool calls, as Hugging Face checkpoints define them: {@link
 * io.github.djlllmzoo.chat.ChatTemplate} renders a conversation of {@link
 * io.github.djlllmzoo.chat.ChatMessage}s (and the tools offered) with the checkpoint's Jinja
 * template, printing values as Jinja2 does ({@link io.github.djlllmzoo.chat.PythonStr}); {@link
 * io.github.djlllmzoo.chat.ToolCallSyntax} recognizes how the template writes {@link
 * io.github.djlllmzoo.chat.ToolCall}s, and its {@link io.github.djlllmzoo.chat.ToolCallParser}
 * reads them back from a reply, streamed or whole. A template that refuses a conversation fails
 * with a {@link io.github.djlllmzoo.chat.ChatTemplateException} naming the part of the request at
 * fault.
 *
 * @serial exclude
 */
package io.github.djlllmzoo.chat;
