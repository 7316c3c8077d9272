package io.github.djlllmzoo.server;

import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.time.Duration;

/** The HTTP client and requests of the serving tests that drive a server over loopback. */
final class TestHttp {

    /** An HTTP/1.1 client, as OpenAI's clients talk to servers. */
    static final HttpClient CLIENT =
            HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

    private TestHttp() {}

    /**
     * @param server the server
     * @param path its route
     * @param body the JSON body
     * @return a POST of the body
     */
    static HttpRequest post(OpenAiServer server, String path, String body) {
        return HttpRequest.newBuilder(server.uri().resolve(path))
                .timeout(Duration.ofSeconds(60))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body))
                .build();
    }

    /**
     * A completion of exactly {@code maxTokens} tokens ({@code ignore_eos}), streamed with usage or
     * whole.
     *
     * @param server the server
     * @param maxTokens the tokens it generates
     * @param stream whether it is streamed
     * @return the request
     */
    static HttpRequest completion(OpenAiServer server, int maxTokens, boolean stream) {
        return post(
                server,
                "/v1/completions",
                "{\"prompt\": \"Once upon a time\", \"max_tokens\": "
                        + maxTokens
                        + ", \"ignore_eos\": true, \"stream\": "
                        + stream
                        + (stream ? ", \"stream_options\": {\"include_usage\": true}" : "")
                        + "}");
    }
}
