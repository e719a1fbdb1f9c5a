package dev.loupe.agent.ship;

import dev.loupe.pprof.ParcaRules;
import dev.loupe.pprof.PprofFiles;
import dev.loupe.pprof.parca.RawProfileSeries;
import dev.loupe.pprof.parca.RawSample;
import dev.loupe.pprof.parca.WriteRawRequest;
import dev.loupe.pprof.parca.WriteRawResponse;
import dev.loupe.pprof.proto.Profile;
import com.google.protobuf.InvalidProtocolBufferException;
import io.grpc.InsecureServerCredentials;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerCredentials;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;

/**
 * An independent implementation of Parca's WriteRaw endpoint: grpc-java's Netty server (h2c with prior
 * knowledge, or TLS), a generic byte[] method (no generated stubs), Parca's validation of every request,
 * errors as real gRPC statuses. Can be stopped and started again on the same port.
 */
public final class ParcaStandIn implements AutoCloseable {
    static final String SERVICE = "parca.profilestore.v1alpha1.ProfileStoreService";
    public static final Metadata.Key<String> AUTHORIZATION = Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);

    /** How to answer a request that passed validation. */
    public record Answer(Status status, boolean headersBeforeStatus) {
        public static final Answer OK = new Answer(Status.OK, true);
    }

    public record Received(WriteRawRequest request, Metadata headers) {}

    private static final MethodDescriptor.Marshaller<byte[]> BYTES = new MethodDescriptor.Marshaller<>() {
        @Override
        public InputStream stream(byte[] value) {
            return new ByteArrayInputStream(value);
        }

        @Override
        public byte[] parse(InputStream stream) {
            try {
                return stream.readAllBytes();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    };
    static final MethodDescriptor<byte[], byte[]> WRITE_RAW = MethodDescriptor.<byte[], byte[]>newBuilder()
            .setType(MethodDescriptor.MethodType.UNARY)
            .setFullMethodName(MethodDescriptor.generateFullMethodName(SERVICE, "WriteRaw"))
            .setRequestMarshaller(BYTES)
            .setResponseMarshaller(BYTES)
            .build();

    private final ServerCredentials credentials;
    private final List<Received> accepted = new CopyOnWriteArrayList<>();
    private final List<String> rejections = new CopyOnWriteArrayList<>();
    private volatile BiFunction<WriteRawRequest, Metadata, Answer> answer = (r, h) -> Answer.OK;
    private Server server;
    private int port;

    public ParcaStandIn() {
        this(InsecureServerCredentials.create());
    }

    ParcaStandIn(ServerCredentials credentials) {
        this.credentials = credentials;
    }

    /** Starts on {@code port} (0 = any free port the first time; the same port after a stop). */
    public synchronized ParcaStandIn start() throws IOException {
        ServerServiceDefinition service = ServerServiceDefinition.builder(SERVICE)
                .addMethod(WRITE_RAW, this::handle)
                .build();
        server = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", port), credentials)
                .maxInboundMessageSize(64 << 20)
                .addService(service)
                .build()
                .start();
        port = server.getPort();
        return this;
    }

    public synchronized void stop() throws InterruptedException {
        if (server != null) {
            server.shutdown();
            if (!server.awaitTermination(10, TimeUnit.SECONDS)) {
                server.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
            }
            server = null;
        }
    }

    public int port() {
        return port;
    }

    public String address() {
        return "127.0.0.1:" + port;
    }

    public void answer(BiFunction<WriteRawRequest, Metadata, Answer> answer) {
        this.answer = answer;
    }

    /** Requests that passed validation and were answered OK, in arrival order. */
    public List<Received> accepted() {
        return List.copyOf(accepted);
    }

    public List<String> rejections() {
        return List.copyOf(rejections);
    }

    private ServerCall.Listener<byte[]> handle(ServerCall<byte[], byte[]> call, Metadata headers) {
        call.request(1);
        return new ServerCall.Listener<>() {
            private byte[] message;

            @Override
            public void onMessage(byte[] m) {
                message = m;
            }

            @Override
            public void onHalfClose() {
                if (message == null) {
                    call.close(Status.INVALID_ARGUMENT.withDescription("no request message"), new Metadata());
                    return;
                }
                WriteRawRequest request;
                try {
                    request = WriteRawRequest.parseFrom(message);
                } catch (InvalidProtocolBufferException e) {
                    reject(Status.INVALID_ARGUMENT.withDescription("undecodable WriteRawRequest: " + e.getMessage()));
                    return;
                }
                List<String> problems = violations(request);
                if (!problems.isEmpty()) {
                    reject(Status.INVALID_ARGUMENT.withDescription(String.join("; ", problems)));
                    return;
                }
                Answer a = answer.apply(request, headers);
                if (a.status().isOk()) {
                    accepted.add(new Received(request, headers));
                    call.sendHeaders(new Metadata());
                    call.sendMessage(WriteRawResponse.getDefaultInstance().toByteArray());
                    call.close(Status.OK, new Metadata());
                } else {
                    if (a.headersBeforeStatus()) {
                        // Headers, then the status in real trailers (not Trailers-Only).
                        call.sendHeaders(new Metadata());
                    }
                    call.close(a.status(), new Metadata());
                }
            }

            private void reject(Status status) {
                rejections.add(status.getDescription());
                call.close(status, new Metadata());
            }
        };
    }

    /** Parca's checks: the series-level ones here, the pprof ones by {@link ParcaRules}. */
    static List<String> violations(WriteRawRequest request) {
        List<String> v = new ArrayList<>();
        for (int s = 0; s < request.getSeriesCount(); s++) {
            RawProfileSeries series = request.getSeries(s);
            String at = "series[" + s + "]";
            Set<String> names = new HashSet<>();
            boolean hasName = false;
            for (var label : series.getLabels().getLabelsList()) {
                if (!ParcaRules.isValidPrometheusLabelName(label.getName())) {
                    v.add(at + ": invalid label name \"" + label.getName() + "\"");
                }
                if (!names.add(label.getName())) {
                    v.add(at + ": duplicate label name \"" + label.getName() + "\"");
                }
                hasName |= label.getName().equals("__name__");
            }
            if (!hasName) {
                v.add(at + ": labels lack __name__");
            }
            for (int i = 0; i < series.getSamplesCount(); i++) {
                RawSample sample = series.getSamples(i);
                Profile p;
                try {
                    p = PprofFiles.parse(sample.getRawProfile().toByteArray());
                } catch (IllegalArgumentException e) {
                    v.add(at + ".samples[" + i + "]: " + e.getMessage());
                    continue;
                }
                for (String problem : ParcaRules.violations(p)) {
                    v.add(at + ".samples[" + i + "]: " + problem);
                }
                if (sample.getExecutableInfoCount() > 0 && sample.getExecutableInfoCount() != p.getMappingCount()) {
                    v.add(at + ".samples[" + i + "]: " + sample.getExecutableInfoCount()
                            + " executable_info for " + p.getMappingCount() + " mappings");
                }
            }
        }
        return v;
    }

    @Override
    public void close() throws InterruptedException {
        stop();
    }
}
