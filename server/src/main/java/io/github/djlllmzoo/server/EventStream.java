package io.github.djlllmzoo.server;

import com.google.gson.JsonObject;
import io.github.djlllmzoo.chat.ToolCall;
import io.github.djlllmzoo.chat.ToolCallParser;
import io.github.djlllmzoo.translators.FinishReason;
import io.javalin.http.Context;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CancellationException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A streamed answer: a job's events written as OpenAI's server-sent events as the job produces them
 * (text pieces, a choice's end, a failure), with the tool calls of a chat reply read as it streams.
 */
final class EventStream {

    private static final Logger LOG = LoggerFactory.getLogger(EventStream.class);
    private static final byte[] DONE = "data: [DONE]\n\n".getBytes(StandardCharsets.UTF_8);
    /** A server-sent event comment: clients skip it; writing it tells whether the client is there. */
    private static final byte[] CHECK = ":\n\n".getBytes(StandardCharsets.UTF_8);

    private EventStream() {}

    /** Writes the job's events as server-sent events; a failed write means the client left. */
    static void write(
            Context ctx, CompletionCall call, GenerationJob job, String id, long now, String served) {
        HttpServletResponse res = ctx.res();
        res.setStatus(200);
        res.setContentType("text/event-stream");
        res.setCharacterEncoding("UTF-8");
        res.setHeader("Cache-Control", "no-cache");
        res.setHeader("X-Accel-Buffering", "no");
        Endpoint endpoint = call.endpoint();
        boolean usage = call.includeUsage();
        try {
            OutputStream out = res.getOutputStream();
            int sequences = job.sequences();
            if (endpoint == Endpoint.CHAT) {
                for (int n = 0; n < sequences; n++) {
                    send(
                            out,
                            OpenAiResponses.chunk(
                                    endpoint, id, now, served, n, "", "assistant", null, usage));
                }
            }
            // the reply's tool calls, read as it streams: content and whole calls as they close
            ToolCallParser[] parsers = null;
            if (call.toolCalls() != null) {
                parsers = new ToolCallParser[sequences];
                for (int n = 0; n < sequences; n++) {
                    parsers[n] = call.toolCalls().parser();
                }
            }
            int finished = 0;
            int completionTokens = 0;
            while (finished < sequences) {
                GenerationJob.Event event = job.nextEvent();
                if (event instanceof GenerationJob.CheckClient check) {
                    checkClient(out, job, check);
                } else if (event instanceof GenerationJob.Text text) {
                    if (parsers != null) {
                        int n = text.sequence();
                        sendParsed(out, call, id, now, served, n, parsers[n].append(text.piece()));
                        continue;
                    }
                    send(
                            out,
                            OpenAiResponses.chunk(
                                    endpoint,
                                    id,
                                    now,
                                    served,
                                    text.sequence(),
                                    text.piece(),
                                    null,
                                    null,
                                    usage));
                } else if (event instanceof GenerationJob.Finished end) {
                    finished++;
                    completionTokens += end.tokens();
                    String reason = OpenAiResponses.finishReason(end.reason());
                    if (parsers != null) {
                        ToolCallParser parser = parsers[end.sequence()];
                        sendParsed(out, call, id, now, served, end.sequence(), parser.finish());
                        if (parser.callCount() > 0 && end.reason() != FinishReason.LENGTH) {
                            reason = OpenAiResponses.TOOL_CALLS;
                        }
                    }
                    send(
                            out,
                            OpenAiResponses.chunk(
                                    endpoint,
                                    id,
                                    now,
                                    served,
                                    end.sequence(),
                                    null,
                                    null,
                                    reason,
                                    usage));
                } else if (event instanceof GenerationJob.Failed failure) {
                    String message =
                            failure.error() instanceof CancellationException
                                    ? "the request was cancelled: the server is shutting down"
                                    : "generation failed: " + OpenAiServer.describe(failure.error());
                    send(
                            out,
                            OpenAiResponses.error(
                                    new ApiException(500, "server_error", null, null, message)));
                    return;
                }
            }
            if (usage) {
                send(
                        out,
                        OpenAiResponses.usageChunk(
                                endpoint, id, now, served, job.promptTokens(), completionTokens));
            }
            out.write(DONE);
            out.flush();
        } catch (IOException e) {
            LOG.debug("client of {} went away: {}", id, e.toString());
            job.cancel();
        } catch (InterruptedException e) {
            job.cancel();
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            job.cancel();
            throw e;
        }
    }

    /**
     * Writes a comment so that a closed connection fails now rather than at the next token; the job
     * is cancelled (its slot freed) before the check is answered.
     */
    private static void checkClient(OutputStream out, GenerationJob job, GenerationJob.CheckClient check)
            throws IOException {
        try {
            out.write(CHECK);
            out.flush();
        } catch (IOException e) {
            job.cancel();
            throw e;
        } finally {
            check.checked().complete(null);
        }
    }

    /** Sends what a piece of a choice decided: its content, then its calls (the first only unless parallel). */
    private static void sendParsed(
            OutputStream out,
            CompletionCall call,
            String id,
            long now,
            String served,
            int sequence,
            ToolCallParser.Delta delta)
            throws IOException {
        boolean usage = call.includeUsage();
        if (!delta.content().isEmpty()) {
            send(
                    out,
                    OpenAiResponses.chunk(
                            Endpoint.CHAT, id, now, served, sequence, delta.content(), null, null, usage));
        }
        List<ToolCall> calls = delta.calls();
        if (!call.parallelToolCalls()) {
            calls = calls.subList(0, Math.max(0, Math.min(calls.size(), 1 - delta.firstIndex())));
        }
        if (!calls.isEmpty()) {
            send(
                    out,
                    OpenAiResponses.toolCallsChunk(
                            id, now, served, sequence, calls, delta.firstIndex(), usage));
        }
    }

    private static void send(OutputStream out, JsonObject chunk) throws IOException {
        out.write(
                ("data: " + OpenAiResponses.GSON.toJson(chunk) + "\n\n")
                        .getBytes(StandardCharsets.UTF_8));
        out.flush();
    }

}
