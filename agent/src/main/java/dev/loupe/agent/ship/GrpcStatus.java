package dev.loupe.agent.ship;

/** gRPC status codes (grpc/doc/statuscodes.md) and which of them a retry can fix. */
enum GrpcStatus {
    OK, CANCELLED, UNKNOWN, INVALID_ARGUMENT, DEADLINE_EXCEEDED, NOT_FOUND, ALREADY_EXISTS,
    PERMISSION_DENIED, RESOURCE_EXHAUSTED, FAILED_PRECONDITION, ABORTED, OUT_OF_RANGE,
    UNIMPLEMENTED, INTERNAL, UNAVAILABLE, DATA_LOSS, UNAUTHENTICATED;

    /** The code's number on the wire (its ordinal: the enum lists 0..16 in order). */
    int code() {
        return ordinal();
    }

    /** Null for a number outside 0..16. */
    static GrpcStatus of(int code) {
        GrpcStatus[] all = values();
        return code >= 0 && code < all.length ? all[code] : null;
    }

    /**
     * Server away, overloaded or slow: the same request may succeed later. Everything else (bad
     * request, credentials, unknown method, server bugs) would fail the same way forever.
     */
    boolean retryable() {
        return switch (this) {
            case UNAVAILABLE, RESOURCE_EXHAUSTED, DEADLINE_EXCEEDED, ABORTED -> true;
            default -> false;
        };
    }
}
