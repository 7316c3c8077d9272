package io.github.djlllmzoo.chat;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.hubspot.jinjava.Jinjava;
import com.hubspot.jinjava.JinjavaConfig;
import com.hubspot.jinjava.el.JinjavaInterpreterResolver;
import com.hubspot.jinjava.interpret.RenderResult;
import com.hubspot.jinjava.interpret.TemplateError;
import com.hubspot.jinjava.lib.fn.ELFunctionDefinition;
import io.github.djlllmzoo.blocks.InvalidCheckpointException;
import io.github.djlllmzoo.blocks.config.CheckpointFiles;
import io.github.djlllmzoo.blocks.config.ConfigJson;
import io.github.djlllmzoo.translators.TextTokenizer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.ZonedDateTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import jinjava.javax.el.CompositeELResolver;

/**
 * Turns chat messages into a prompt the way Hugging Face's {@code apply_chat_template} does: the
 * Jinja {@code chat_template} of the checkpoint's {@code tokenizer_config.json}, rendered with
 * {@code messages}, {@code add_generation_prompt} and the special tokens ({@code bos_token},
 * {@code eos_token}, {@code unk_token}, {@code pad_token}) in scope and {@code raise_exception}
 * and {@code strftime_now} defined. Templates run on Jinjava with Jinja2's semantics where chat
 * templates need them: Jinja2's whitespace control and {@code trim_blocks}/{@code lstrip_blocks},
 * {@code x[::-1]}, {@code namespace(...)}, {@code not}'s precedence, {@code for ... if ...}, {@code raw} blocks and printing
 * ({@link Jinja2Syntax}, {@link PythonStr}), Python's string methods and string indexing ({@link
 * PythonStringMethods}), transformers' {@code tojson} ({@link PythonJson}), strings being {@code
 * iterable} ({@link PythonIterable}), and message content
 * that is only ever text (never interpreted as template source). Checked against Jinja2 on the
 * templates of TinyLlama, SmolLM, Llama 2, 3, 3.1 and 3.2, Qwen2.5, Qwen3, Gemma 2 and 3, Phi-3 and Mistral
 * v0.3.
 *
 * <p>Without a template (e.g. GPT-2) the fallback format is one line {@code role: content} per
 * message, then {@code assistant:} for the model to continue.
 *
 * <p>{@link #encode} adds the tokenizer's special tokens unless the rendered text already starts
 * with the BOS token, so a template that writes {@code bos_token} itself does not get a second one.
 */
public final class ChatTemplate {

    private static final List<String> SPECIAL_TOKENS =
            List.of("bos_token", "eos_token", "unk_token", "pad_token");

    /** Bounds a template's output, so that a runaway loop cannot exhaust memory. */
    private static final long MAX_OUTPUT_CHARS = 4L << 20;

    private final String source;
    private final String template;
    private final Map<String, String> specialTokens;
    private final Jinjava jinjava;

    private ChatTemplate(String template, Map<String, String> specialTokens) {
        this.source = template;
        this.template = template == null ? null : Jinja2Syntax.toJinjava(template);
        this.specialTokens = Map.copyOf(specialTokens);
        if (template == null) {
            jinjava = null;
        } else {
            CompositeELResolver resolver = new CompositeELResolver();
            resolver.add(new PythonStringMethods());
            resolver.add(JinjavaInterpreterResolver.DEFAULT_RESOLVER_READ_WRITE);
            jinjava =
                    new Jinjava(
                            JinjavaConfig.newBuilder()
                                    .withNestedInterpretationEnabled(false)
                                    .withElResolver(resolver)
                                    .withMaxOutputSize(MAX_OUTPUT_CHARS)
                                    .build());
            jinjava.getGlobalContext().registerFilter(new PythonJson());
            jinjava.getGlobalContext().registerExpTest(new PythonIterable());
            jinjava.getGlobalContext()
                    .registerFunction(
                            new ELFunctionDefinition(
                                    "",
                                    "raise_exception",
                                    ChatTemplate.class,
                                    "raiseException",
                                    String.class));
            jinjava.getGlobalContext()
                    .registerFunction(
                            new ELFunctionDefinition(
                                    "", Jinja2Syntax.PRINT, PythonStr.class, "str", Object.class));
            jinjava.getGlobalContext()
                    .registerFunction(
                            new ELFunctionDefinition(
                                    "",
                                    "strftime_now",
                                    ChatTemplate.class,
                                    "strftimeNow",
                                    String.class));
        }
    }

    /**
     * A template with its special tokens.
     *
     * @param template the Jinja source, or {@code null} for the fallback format
     * @param specialTokens values of {@code bos_token}, {@code eos_token}, ... (absent ones render
     *     empty)
     * @return the template
     */
    public static ChatTemplate of(String template, Map<String, String> specialTokens) {
        return new ChatTemplate(template, specialTokens);
    }

    /**
     * The template of a checkpoint directory: {@code chat_template} of its {@code
     * tokenizer_config.json} (a string, or a list of {@code {name, template}} of which {@code
     * default} is taken), or the fallback when there is none.
     *
     * @param dir the checkpoint directory
     * @return the template
     * @throws InvalidCheckpointException naming the file and field of a malformed value
     */
    public static ChatTemplate forCheckpoint(Path dir) throws InvalidCheckpointException {
        Path file = dir.resolve(CheckpointFiles.TOKENIZER_CONFIG);
        if (!Files.isRegularFile(file)) {
            return of(null, Map.of());
        }
        ConfigJson config = ConfigJson.read(file);
        Map<String, String> tokens = new LinkedHashMap<>();
        for (String name : SPECIAL_TOKENS) {
            String value = tokenText(config, name);
            if (value != null) {
                tokens.put(name, value);
            }
        }
        String text = templateText(config);
        try {
            return of(text, tokens);
        } catch (IllegalArgumentException e) {
            throw config.invalid("chat_template", e.getMessage());
        }
    }

    private static String tokenText(ConfigJson config, String field)
            throws InvalidCheckpointException {
        JsonElement value = config.json().get(field);
        if (value == null || value.isJsonNull()) {
            return null;
        }
        if (value.isJsonObject()) {
            return config.optObject(field).requireString("content");
        }
        return config.requireString(field);
    }

    private static String templateText(ConfigJson config) throws InvalidCheckpointException {
        JsonElement value = config.json().get("chat_template");
        if (value == null || value.isJsonNull()) {
            return null;
        }
        if (value.isJsonPrimitive() && value.getAsJsonPrimitive().isString()) {
            return value.getAsString();
        }
        if (value.isJsonArray()) {
            for (JsonElement item : value.getAsJsonArray()) {
                if (item.isJsonObject()) {
                    JsonObject named = item.getAsJsonObject();
                    JsonElement name = named.get("name");
                    JsonElement text = named.get("template");
                    if (name != null
                            && "default".equals(name.getAsString())
                            && text != null
                            && text.isJsonPrimitive()) {
                        return text.getAsString();
                    }
                }
            }
        }
        throw config.invalid(
                "chat_template",
                "expected a template string or a list of {name, template} with a 'default' one");
    }

    /** @return the Jinja source as the checkpoint publishes it, or null for the fallback format */
    public String source() {
        return source;
    }

    /** @return whether there is no Jinja template and the fallback format is used */
    public boolean isFallback() {
        return template == null;
    }

    /**
     * Renders a conversation, ending where the assistant's reply begins ({@code
     * add_generation_prompt = true}).
     *
     * @param messages the conversation (at least one message)
     * @return the prompt text
     * @throws ChatTemplateException if the template rejects the conversation (its {@code
     *     raise_exception}) or fails, with the template's message and the request field at fault
     */
    public String render(List<ChatMessage> messages) {
        return render(messages, true, Map.of());
    }

    /**
     * Renders a conversation as Hugging Face's {@code apply_chat_template(messages,
     * add_generation_prompt=..., **variables)} does.
     *
     * @param messages the conversation (at least one message)
     * @param addGenerationPrompt whether to end with the header of the assistant's reply
     * @param variables further template variables, e.g. Qwen3's {@code enable_thinking}
     * @return the prompt text
     * @throws ChatTemplateException if the template rejects the conversation (its {@code
     *     raise_exception}) or fails, with the template's message and the request field at fault
     */
    public String render(
            List<ChatMessage> messages, boolean addGenerationPrompt, Map<String, ?> variables) {
        return render(messages, List.of(), addGenerationPrompt, variables);
    }

    /**
     * Renders a conversation as Hugging Face's {@code apply_chat_template(messages, tools=tools,
     * add_generation_prompt=..., **variables)} does: the tool specifications are the template's
     * {@code tools} (absent when there are none), an assistant message's tool calls its {@code
     * tool_calls} (each {@code {"id", "type": "function", "function": {"name", "arguments"}}},
     * the arguments as the object they encode), a tool message's call id its {@code
     * tool_call_id}.
     *
     * @param messages the conversation (at least one message)
     * @param tools OpenAI function specifications ({@code {"type": "function", "function":
     *     {"name", "description", "parameters"}}}), or an empty list
     * @param addGenerationPrompt whether to end with the header of the assistant's reply
     * @param variables further template variables, e.g. Qwen3's {@code enable_thinking}
     * @return the prompt text
     * @throws ChatTemplateException if the template rejects the conversation (its {@code
     *     raise_exception}) or fails, with the template's message and the request field at fault,
     *     or tools are given to the fallback format, which has no place for them
     */
    public String render(
            List<ChatMessage> messages,
            List<JsonObject> tools,
            boolean addGenerationPrompt,
            Map<String, ?> variables) {
        if (messages.isEmpty()) {
            throw new ChatTemplateException("messages", "the conversation has no messages");
        }
        if (template == null) {
            if (!tools.isEmpty()) {
                throw new ChatTemplateException(
                        "tools", "the model has no chat template, so no way to offer it tools");
            }
            StringBuilder prompt = new StringBuilder();
            for (ChatMessage message : messages) {
                prompt.append(message.role())
                        .append(": ")
                        .append(message.content() == null ? "" : message.content())
                        .append('\n');
            }
            return addGenerationPrompt ? prompt.append("assistant:").toString() : prompt.toString();
        }
        Map<String, Object> context = new HashMap<>(variables);
        if (!tools.isEmpty()) {
            context.put("tools", JinjaValues.tools(tools));
        }
        Rendering rendering = renderJinja(messages, addGenerationPrompt, context);
        if (rendering.error() == null) {
            return rendering.output();
        }
        throw new ChatTemplateException(
                refusesLeadingSystem(messages, addGenerationPrompt, context)
                        ? "messages[0].role"
                        : "messages",
                "the chat template rejected the messages: " + rendering.error());
    }

    /**
     * Whether the template refuses the conversation only for its leading system message: without
     * it, the rest renders.
     */
    private boolean refusesLeadingSystem(
            List<ChatMessage> messages, boolean addGenerationPrompt, Map<String, ?> variables) {
        return messages.size() > 1
                && "system".equals(messages.get(0).role())
                && renderJinja(messages.subList(1, messages.size()), addGenerationPrompt, variables)
                                .error()
                        == null;
    }

    /** A template's output, or its fatal errors joined (then the output is null). */
    private record Rendering(String output, String error) {}

    private Rendering renderJinja(
            List<ChatMessage> messages, boolean addGenerationPrompt, Map<String, ?> variables) {
        List<Map<String, Object>> list = new ArrayList<>(messages.size());
        for (ChatMessage message : messages) {
            Map<String, Object> item = new LinkedHashMap<>(); // in order, as tojson writes it
            item.put("role", message.role());
            // "" for an assistant turn with only tool calls: templates test or search the content
            // (Qwen3's '</think>' in content), which a null would break
            item.put("content", message.content() == null ? "" : message.content());
            if (!message.toolCalls().isEmpty()) {
                List<Map<String, Object>> calls = new ArrayList<>();
                for (ToolCall call : message.toolCalls()) {
                    Map<String, Object> function = new LinkedHashMap<>();
                    function.put("name", call.name());
                    function.put("arguments", JinjaValues.arguments(call.arguments()));
                    Map<String, Object> callItem = new LinkedHashMap<>();
                    callItem.put("id", call.id());
                    callItem.put("type", "function");
                    callItem.put("function", function);
                    calls.add(callItem);
                }
                item.put("tool_calls", calls);
            }
            if (message.toolCallId() != null) {
                item.put("tool_call_id", message.toolCallId());
            }
            list.add(item);
        }
        Map<String, Object> context = new HashMap<>(specialTokens);
        for (String name : SPECIAL_TOKENS) {
            context.putIfAbsent(name, "");
        }
        context.putAll(variables);
        context.put("messages", list);
        context.put("add_generation_prompt", addGenerationPrompt);
        RenderResult result = jinjava.renderForResult(template, context);
        List<String> errors = new ArrayList<>();
        for (TemplateError error : result.getErrors()) {
            if (error.getSeverity() == TemplateError.ErrorType.FATAL) {
                errors.add(errorMessage(error));
            }
        }
        if (!errors.isEmpty()) {
            return new Rendering(null, String.join("; ", errors));
        }
        return new Rendering(result.getOutput(), null);
    }

    private static String errorMessage(TemplateError error) {
        for (Throwable cause = error.getException(); cause != null; cause = cause.getCause()) {
            if (cause instanceof RaisedException) {
                return cause.getMessage();
            }
        }
        return error.getMessage();
    }

    /**
     * Tokenizes a rendered prompt with exactly one BOS where the model wants one: the template's,
     * when the text starts with {@code bos_token}, else the one the tokenizer adds.
     *
     * @param rendered the output of {@link #render}
     * @param tokenizer the checkpoint's tokenizer
     * @return the prompt token ids
     */
    public long[] encode(String rendered, TextTokenizer tokenizer) {
        String bos = specialTokens.get("bos_token");
        if (bos != null && !bos.isEmpty() && rendered.startsWith(bos)) {
            return tokenizer.huggingFaceTokenizer().encode(rendered, false, false).getIds();
        }
        return tokenizer.encode(rendered);
    }

    /**
     * {@code raise_exception(message)} of Hugging Face chat templates.
     *
     * @param message why the template refuses the conversation
     * @return never
     * @throws RaisedException always
     */
    public static String raiseException(String message) {
        throw new RaisedException(message);
    }

    /**
     * {@code strftime_now(format)} of Hugging Face chat templates: the local time now, formatted as
     * Python's {@code strftime} does.
     *
     * @param format a Python format, e.g. {@code "%d %b %Y"}
     * @return the formatted time
     */
    public static String strftimeNow(String format) {
        return PythonStrftime.format(ZonedDateTime.now(), format);
    }

    /** What {@code raise_exception} and the other template functions throw, with their message. */
    static final class RaisedException extends RuntimeException {
        RaisedException(String message) {
            super(message);
        }
    }
}
