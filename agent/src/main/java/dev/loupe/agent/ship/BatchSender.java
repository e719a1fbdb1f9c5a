package dev.loupe.agent.ship;

import java.time.Duration;

/**
 * Sends one spooled batch to a sink and says what became of it. Must return within about
 * {@code timeout}; an exception counts as a retryable failure.
 */
@FunctionalInterface
public interface BatchSender {
    SendResult send(SpooledBatch batch, Duration timeout);
}
