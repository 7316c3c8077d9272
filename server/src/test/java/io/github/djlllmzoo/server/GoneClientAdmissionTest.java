package io.github.djlllmzoo.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.djlllmzoo.zoo.LocalModel;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A client that closes a stream and sends its next request at once stays within the limit, so it
 * must be admitted, even when the server has not yet written to the closed connection: here its old
 * request waits to join a batch that a long request holds, so nothing would be written to it for
 * seconds. A client still connected keeps its slot, and a request past the limit gets 429.
 */
class GoneClientAdmissionTest {

    /** The long request's tokens: long enough to hold the batch for the whole test. */
    private static final int LONG_TOKENS = 8000;

    @TempDir Path dir;

    @Test
    void aClientThatClosedAStreamAndSendsItsNextRequestAtOnceIsAdmitted() throws Exception {
        LocalModel model = LocalModel.load(RunningServer.gpt2(dir, LONG_TOKENS + 16));
        try (OpenAiServer server =
                OpenAiServer.start(
                        model,
                        ServerOptions.DEFAULTS.withAddress("127.0.0.1", 0).withScheduling(2, 1, Duration.ZERO))) {
            // holds the only row of the batch (and one of the 2 slots) until the server closes
            CompletableFuture<HttpResponse<String>> holder =
                    TestHttp.CLIENT.sendAsync(
                            TestHttp.completion(server, LONG_TOKENS, false), HttpResponse.BodyHandlers.ofString());
            await(() -> server.stats().runningRows() == 1, server);
            try (Socket waiting = new Socket("127.0.0.1", server.port())) {
                send(waiting, server);
                await(() -> server.stats().queued() == 1, server);
                // connected, so its slot stays taken: one request more is past the limit
                assertEquals(429, sendStream(server), "a third request while 2 are in flight");
            }
            // its client has gone; nothing has been written to it since, and it sends its next
            // request, which waits to join too (so its status comes with its first token): it is
            // admitted once the request of the client that left is cancelled and it is queued instead
            CompletableFuture<HttpResponse<InputStream>> next =
                    TestHttp.CLIENT.sendAsync(
                            TestHttp.completion(server, 8, true), HttpResponse.BodyHandlers.ofInputStream());
            await(() -> next.isDone() || server.stats().cancelled() == 1 && server.stats().queued() == 1, server);
            assertEquals(1, server.stats().rejected(), "only the request past the limit was refused");
            assertEquals(0, server.stats().completed(), "the long request still holds the batch");
            next.cancel(true);
            holder.cancel(true);
        } finally {
            model.close();
        }
    }

    /** Writes a streamed completion request by hand, so the test closes its connection when it likes. */
    private static void send(Socket socket, OpenAiServer server) throws Exception {
        byte[] body = ("{\"prompt\": \"Once upon a time\", \"max_tokens\": 8, \"stream\": true}")
                .getBytes(StandardCharsets.UTF_8);
        OutputStream out = socket.getOutputStream();
        out.write(("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1:" + server.port()
                        + "\r\nContent-Type: application/json\r\nContent-Length: " + body.length + "\r\n\r\n")
                .getBytes(StandardCharsets.US_ASCII));
        out.write(body);
        out.flush();
    }

    /** @return the status of a streamed request, whose stream is then closed */
    private static int sendStream(OpenAiServer server) throws Exception {
        HttpResponse<InputStream> response =
                TestHttp.CLIENT.send(TestHttp.completion(server, 8, true), HttpResponse.BodyHandlers.ofInputStream());
        response.body().close();
        return response.statusCode();
    }

    private static void await(BooleanSupplier condition, OpenAiServer server) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (!condition.getAsBoolean()) {
            assertTrue(System.nanoTime() < deadline, "timed out; " + server.stats());
            Thread.sleep(1);
        }
    }
}
