/**
 * The OpenAI-compatible HTTP server: {@link io.github.djlllmzoo.server.OpenAiServer} serves a loaded
 * model (and its LoRA adapters) on {@code /v1/completions}, {@code /v1/chat/completions}, {@code
 * /v1/models}, {@code /health} and {@code /metrics}, configured by {@link
 * io.github.djlllmzoo.server.ServerOptions}; chat prompts are rendered by {@link
 * io.github.djlllmzoo.chat.ChatTemplate}, the checkpoint's Jinja template, and replies' tool calls
 * read by its {@link io.github.djlllmzoo.chat.ToolCallSyntax}. A service can embed it in its own
 * JVM.
 *
 * @serial exclude
 */
package io.github.djlllmzoo.server;
