package dev.loupe.agent.sampling;

import java.time.InstantSource;
import java.util.Objects;
import java.util.function.LongSupplier;

/**
 * The agent's two clocks. Intervals, timeouts and health use {@code monotonicNanos} (System.nanoTime: NTP
 * steps cannot stop rotation or fail /healthz); {@code wall} is read only for the timestamps written into
 * profiles.
 */
public record Clocks(InstantSource wall, LongSupplier monotonicNanos) {
    public Clocks {
        Objects.requireNonNull(wall, "wall");
        Objects.requireNonNull(monotonicNanos, "monotonicNanos");
    }

    public static Clocks system() {
        return new Clocks(InstantSource.system(), System::nanoTime);
    }

    long wallNanos() {
        var i = wall.instant();
        return i.getEpochSecond() * 1_000_000_000L + i.getNano();
    }

    long nanoTime() {
        return monotonicNanos.getAsLong();
    }
}
