package dev.loupe.agent.ship;

/**
 * What a sink made of one batch. Failures are values, not exceptions, so the delivery loop decides
 * in one place what is retried and what is quarantined.
 */
public sealed interface SendResult {
    /** The sink confirmed the batch: it may be deleted from the spool. */
    record Delivered() implements SendResult {}

    /** Worth trying again later (server away or overloaded, network failure, timeout). */
    record Retryable(String reason) implements SendResult {}

    /** The sink will never accept this batch as it is (malformed, unauthorised, unknown method...). */
    record Rejected(String reason) implements SendResult {}

    SendResult DELIVERED = new Delivered();
}
