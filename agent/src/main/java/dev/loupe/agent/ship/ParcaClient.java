package dev.loupe.agent.ship;

import dev.loupe.pprof.parca.WriteRawRequest;
import okhttp3.Call;
import okhttp3.Headers;
import okhttp3.HttpUrl;
import okhttp3.MediaType;
import okhttp3.OkHttpClient;
import okhttp3.Protocol;
import okhttp3.Request;
import okhttp3.RequestBody;
import okhttp3.Response;
import okio.Buffer;
import okio.BufferedSink;
import okio.BufferedSource;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Parca's {@code ProfileStoreService/WriteRaw} as one unary gRPC call over OkHttp's HTTP/2: plaintext
 * with prior knowledge (what Parca serves on 7070), or TLS with ALPN h2 and certificate verification.
 * Thread-safe; one instance per remote store. Every failure comes back as a {@link SendResult}.
 */
public final class ParcaClient implements AutoCloseable {
    static final String PATH = "/parca.profilestore.v1alpha1.ProfileStoreService/WriteRaw";
    private static final MediaType GRPC = MediaType.get("application/grpc");
    /** WriteRawResponse is empty; anything much larger is not Parca. */
    private static final long MAX_RESPONSE_BYTES = 1 << 20;

    private final ParcaClientConfig config;
    private final OkHttpClient http;
    private final HttpUrl url;
    private final Headers requestHeaders;

    private ParcaClient(ParcaClientConfig config, OkHttpClient http, Headers requestHeaders) {
        this.config = config;
        this.http = http;
        this.requestHeaders = requestHeaders;
        this.url = new HttpUrl.Builder()
                .scheme(config.insecure() ? "http" : "https")
                .host(config.host())
                .port(config.port())
                .encodedPath(PATH)
                .build();
    }

    /**
     * Reads the bearer token and the TLS files now, so a bad path or PEM fails at start with a clear
     * message (naming files, never their contents).
     */
    public static ParcaClient create(ParcaClientConfig config) throws IOException {
        Duration timeout = config.timeout();
        OkHttpClient.Builder b = new OkHttpClient.Builder()
                // The delivery loop owns retries; OkHttp retrying a POST on its own could send a batch twice.
                .retryOnConnectionFailure(false)
                .followRedirects(false)
                .followSslRedirects(false)
                .connectTimeout(timeout.compareTo(Duration.ofSeconds(10)) < 0 ? timeout : Duration.ofSeconds(10))
                .readTimeout(timeout)
                .writeTimeout(timeout)
                .callTimeout(timeout);
        if (config.insecure()) {
            // h2c with prior knowledge must be the client's only protocol (OkHttp refuses a mix).
            b.protocols(List.of(Protocol.H2_PRIOR_KNOWLEDGE));
        } else {
            b.protocols(List.of(Protocol.HTTP_2, Protocol.HTTP_1_1));
            TlsFiles.Tls tls = TlsFiles.tls(config);
            b.sslSocketFactory(tls.socketFactory(), tls.trustManager());
            if (config.insecureSkipVerify()) {
                b.hostnameVerifier((hostname, session) -> true);
            }
        }

        Headers.Builder h = new Headers.Builder()
                .add("te", "trailers")
                .add("user-agent", "loupe-agent grpc-okhttp");
        if (config.bearerTokenFile().isPresent()) {
            h.add("authorization", "Bearer " + readToken(config.bearerTokenFile().get()));
        }
        for (Map.Entry<String, String> e : config.headers().entrySet()) {
            h.add(e.getKey(), e.getValue());
        }
        return new ParcaClient(config, b.build(), h.build());
    }

    private static String readToken(Path file) throws IOException {
        String token;
        try {
            token = Files.readString(file, StandardCharsets.UTF_8).strip();
        } catch (IOException e) {
            throw new IOException("cannot read bearer token file " + file + ": " + e.getClass().getSimpleName(), e);
        }
        if (token.isEmpty()) {
            throw new IOException("bearer token file " + file + " is empty");
        }
        for (int i = 0; i < token.length(); i++) {
            char c = token.charAt(i);
            if (c < 0x21 || c > 0x7e) {
                throw new IOException("bearer token file " + file + " holds more than one printable ASCII word");
            }
        }
        return token;
    }

    public ParcaClientConfig config() {
        return config;
    }

    /** Sends one WriteRawRequest with the configured timeout. */
    public SendResult writeRaw(WriteRawRequest request) {
        return writeRaw(request.toByteArray(), config.timeout());
    }

    /**
     * Sends one serialized WriteRawRequest (as spooled). {@code timeout} bounds the whole call and is
     * sent as grpc-timeout, so the server gives up too.
     */
    public SendResult writeRaw(byte[] writeRawRequest, Duration timeout) {
        return classify(exchange(writeRawRequest, timeout));
    }

    /** The HTTP/2 exchange and what came back, before any judgement. */
    Exchange exchange(byte[] message, Duration timeout) {
        if (message.length > config.maxMessageBytes()) {
            return new Exchange.TooLarge(message.length, config.maxMessageBytes());
        }
        long millis = Math.max(1, timeout.toMillis());
        Request request = new Request.Builder()
                .url(url)
                .headers(requestHeaders)
                .header("grpc-timeout", grpcTimeout(millis))
                .post(new FramedMessage(message))
                .build();
        Call call = http.newCall(request);
        call.timeout().timeout(millis, TimeUnit.MILLISECONDS);
        try (Response response = call.execute()) {
            BufferedSource body = response.body().source();
            Buffer chunk = new Buffer();
            long total = 0;
            for (long n; (n = body.read(chunk, 8192)) != -1; ) {
                total += n;
                chunk.clear();
                if (total > MAX_RESPONSE_BYTES) {
                    return new Exchange.Reply(response.code(), response.protocol().toString(), null, null, false,
                            "response body over " + MAX_RESPONSE_BYTES + " bytes");
                }
            }
            Headers trailers = response.trailers();
            String status = trailers.get("grpc-status");
            String message0 = trailers.get("grpc-message");
            boolean trailersOnly = false;
            if (status == null && response.header("grpc-status") != null) {
                status = response.header("grpc-status");
                message0 = response.header("grpc-message");
                trailersOnly = true;
            }
            return new Exchange.Reply(response.code(), response.protocol().toString(), status,
                    message0 == null ? null : percentDecode(message0), trailersOnly, null);
        } catch (IOException e) {
            return new Exchange.TransportFailure(e);
        } catch (RuntimeException e) {
            // OkHttp reports some broken peers as unchecked exceptions; a retry is still the right answer.
            return new Exchange.TransportFailure(new IOException(e.toString(), e));
        }
    }

    static SendResult classify(Exchange exchange) {
        return switch (exchange) {
            case Exchange.TooLarge t -> new SendResult.Rejected("request is " + t.bytes()
                    + " bytes, over the limit of " + t.limit() + " bytes");
            case Exchange.TransportFailure f -> new SendResult.Retryable("transport: " + describe(f.error()));
            case Exchange.Reply r when r.problem() != null -> new SendResult.Rejected("HTTP " + r.httpStatus()
                    + ": " + r.problem());
            case Exchange.Reply r when r.grpcStatus() != null -> classifyGrpc(r);
            case Exchange.Reply r -> classifyHttp(r.httpStatus());
        };
    }

    private static SendResult classifyGrpc(Exchange.Reply r) {
        int code;
        try {
            code = Integer.parseInt(r.grpcStatus().strip());
        } catch (NumberFormatException e) {
            return new SendResult.Rejected("unparseable grpc-status \"" + r.grpcStatus() + "\" (HTTP " + r.httpStatus() + ")");
        }
        GrpcStatus status = GrpcStatus.of(code);
        if (status == GrpcStatus.OK) {
            return SendResult.DELIVERED;
        }
        String reason = "grpc-status " + code + " " + (status == null ? "(unknown code)" : status.name())
                + (r.grpcMessage() == null || r.grpcMessage().isEmpty() ? "" : ": " + r.grpcMessage());
        return status != null && status.retryable() ? new SendResult.Retryable(reason) : new SendResult.Rejected(reason);
    }

    /** No grpc-status at all: a proxy or a non-gRPC server answered. gRPC's HTTP-to-status mapping, roughly. */
    private static SendResult classifyHttp(int http) {
        String reason = "HTTP " + http + " without grpc-status";
        return switch (http) {
            case 408, 429, 502, 503, 504 -> new SendResult.Retryable(reason);
            default -> new SendResult.Rejected(reason);
        };
    }

    private static String describe(Throwable e) {
        StringBuilder s = new StringBuilder(e.getClass().getSimpleName());
        if (e.getMessage() != null) {
            s.append(": ").append(e.getMessage());
        }
        if (e.getCause() != null && e.getCause() != e && e.getCause().getMessage() != null) {
            s.append(" (").append(e.getCause().getClass().getSimpleName()).append(": ")
                    .append(e.getCause().getMessage()).append(')');
        }
        return s.toString();
    }

    /** gRPC's TimeoutValue: at most 8 digits and a unit; milliseconds unless that needs more digits. */
    static String grpcTimeout(long millis) {
        if (millis <= 99_999_999L) {
            return millis + "m";
        }
        long seconds = Math.min(99_999_999L, millis / 1000 + (millis % 1000 == 0 ? 0 : 1));
        return seconds + "S";
    }

    /** grpc-message is percent-encoded UTF-8; a malformed escape is kept as it is. */
    static String percentDecode(String s) {
        if (s.indexOf('%') < 0) {
            return s;
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream(s.length());
        byte[] in = s.getBytes(StandardCharsets.UTF_8);
        for (int i = 0; i < in.length; i++) {
            if (in[i] == '%' && i + 2 < in.length) {
                int hi = Character.digit(in[i + 1], 16);
                int lo = Character.digit(in[i + 2], 16);
                if (hi >= 0 && lo >= 0) {
                    out.write(hi << 4 | lo);
                    i += 2;
                    continue;
                }
            }
            out.write(in[i]);
        }
        return out.toString(StandardCharsets.UTF_8);
    }

    @Override
    public void close() {
        http.dispatcher().executorService().shutdown();
        http.connectionPool().evictAll();
    }

    @Override
    public String toString() {
        return "ParcaClient[" + config + "]";
    }

    /** The gRPC length-prefixed message: flag 0 (not compressed), 4-byte big-endian length, the bytes. */
    private static final class FramedMessage extends RequestBody {
        private final byte[] message;

        FramedMessage(byte[] message) {
            this.message = message;
        }

        @Override
        public MediaType contentType() {
            return GRPC;
        }

        @Override
        public long contentLength() {
            return 5L + message.length;
        }

        @Override
        public void writeTo(BufferedSink sink) throws IOException {
            sink.writeByte(0);
            sink.writeInt(message.length);
            sink.write(message);
        }
    }

    /** What one call produced. */
    sealed interface Exchange {
        /**
         * The server answered. {@code grpcStatus} and {@code grpcMessage} come from the trailers, or from
         * the headers for a Trailers-Only reply; {@code problem} is set when the reply was unusable.
         */
        record Reply(int httpStatus, String protocol, String grpcStatus, String grpcMessage,
                     boolean trailersOnly, String problem) implements Exchange {}

        /** Connection refused or reset, timeout, TLS failure, stream reset... */
        record TransportFailure(IOException error) implements Exchange {}

        /** Never sent: over the configured message limit. */
        record TooLarge(int bytes, int limit) implements Exchange {}
    }
}
