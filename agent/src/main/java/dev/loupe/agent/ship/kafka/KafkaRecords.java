package dev.loupe.agent.ship.kafka;

import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;

import java.nio.charset.StandardCharsets;
import java.util.Optional;

/**
 * The record format the sender writes and the relay reads (docs/kafka.md): value = one serialized
 * {@code WriteRawRequest} holding one series; key = the series id; these headers, all UTF-8 text.
 */
public final class KafkaRecords {
    private KafkaRecords() {}

    public static final String DEFAULT_TOPIC = "loupe.profiles";
    public static final String CONTENT_TYPE =
            "application/x-protobuf; messageType=parca.profilestore.v1alpha1.WriteRawRequest";

    public static final String HEADER_CONTENT_TYPE = "content-type";
    /** "cpu" or "latency". */
    public static final String HEADER_PROFILE_TYPE = "loupe-profile-type";
    public static final String HEADER_AGENT_VERSION = "loupe-agent-version";
    /** The profiling interval, unix nanoseconds, decimal. */
    public static final String HEADER_START_NANOS = "loupe-start-nanos";
    public static final String HEADER_END_NANOS = "loupe-end-nanos";
    /**
     * Identifies the record across resends of its batch (also after an agent restart, which replays the
     * spool): {@code node/batch sequence/start nanos/index in batch}. The relay drops a record whose id it
     * has forwarded already.
     */
    public static final String HEADER_RECORD_ID = "loupe-record-id";

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    public static Optional<String> header(Headers headers, String name) {
        Header h = headers.lastHeader(name);
        return h == null || h.value() == null ? Optional.empty() : Optional.of(new String(h.value(), StandardCharsets.UTF_8));
    }
}
