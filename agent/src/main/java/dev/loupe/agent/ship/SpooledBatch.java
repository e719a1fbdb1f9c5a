package dev.loupe.agent.ship;

import java.util.Map;

/**
 * One batch as the spool holds it: its place in the order, the sink's metadata (e.g. a Kafka key,
 * start/end nanos), and the bytes to send (for Parca and Kafka: one serialized WriteRawRequest).
 * The payload array is shared, not copied: do not modify it.
 */
public record SpooledBatch(long sequence, Map<String, String> attributes, byte[] payload) {
    public SpooledBatch {
        attributes = Map.copyOf(attributes);
    }

    @Override
    public String toString() {
        return "SpooledBatch[sequence=" + sequence + ", attributes=" + attributes + ", " + payload.length + " bytes]";
    }
}
