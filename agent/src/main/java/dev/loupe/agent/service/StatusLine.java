package dev.loupe.agent.service;

import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.function.LongSupplier;

/**
 * The line {@code systemctl status} shows for the agent ({@code STATUS=}), e.g.
 * {@code 1234 samples/s from 87 processes; sinks: file ok, parca DOWN (connection refused)}. The rate is
 * over the time since the previous line (the first: since this object was made).
 */
public final class StatusLine {
    /** One sink as the status line reports it; {@code detail} may be empty. */
    public record SinkState(String name, boolean healthy, String detail) {
        public SinkState {
            Objects.requireNonNull(name, "name");
            Objects.requireNonNull(detail, "detail");
        }
    }

    private final LongSupplier monotonicNanos;
    private long lastSamples;
    private long lastAt;

    public StatusLine(LongSupplier monotonicNanos) {
        this.monotonicNanos = Objects.requireNonNull(monotonicNanos, "monotonicNanos");
        this.lastAt = monotonicNanos.getAsLong();
    }

    /** The line for now, from the total samples read so far, the processes seen and each sink's state. */
    public synchronized String next(long samplesTotal, int processes, List<SinkState> sinks) {
        long now = monotonicNanos.getAsLong();
        long elapsed = now - lastAt;
        long delta = Math.max(0, samplesTotal - lastSamples); // a counter that went back restarts the rate
        double rate = elapsed > 0 ? delta * 1e9 / elapsed : 0;
        lastSamples = samplesTotal;
        lastAt = now;
        return format(rate, processes, sinks);
    }

    static String format(double samplesPerSecond, int processes, List<SinkState> sinks) {
        StringBuilder b = new StringBuilder();
        boolean small = Math.round(samplesPerSecond * 10) < 100; // one decimal below 10, as it prints
        b.append(small ? String.format(Locale.ROOT, "%.1f", samplesPerSecond)
                        : String.format(Locale.ROOT, "%.0f", samplesPerSecond))
                .append(" samples/s from ").append(processes).append(processes == 1 ? " process" : " processes");
        b.append("; sinks: ");
        if (sinks.isEmpty()) {
            b.append("none");
        }
        for (int i = 0; i < sinks.size(); i++) {
            SinkState s = sinks.get(i);
            b.append(i == 0 ? "" : ", ").append(s.name()).append(s.healthy() ? " ok" : " DOWN");
            if (!s.detail().isEmpty()) {
                b.append(" (").append(s.detail()).append(')');
            }
        }
        return b.toString();
    }
}
