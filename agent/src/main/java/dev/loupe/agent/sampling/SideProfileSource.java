package dev.loupe.agent.sampling;

import dev.loupe.pprof.proto.Profile;
import io.prometheus.metrics.model.registry.PrometheusRegistry;

import java.time.Duration;
import java.util.Optional;

/**
 * A profile made each interval beside the CPU profile (function latency): the agent asks for it when the
 * interval ends, writes it through the same sinks ({@code TYPE-TIME.pb.gz}), serves it on
 * {@code /debug/pprof/TYPE} and registers its metrics for {@code /metrics}.
 */
public interface SideProfileSource {
    /** File name prefix and HTTP path element, e.g. {@code latency}. */
    String profileType();

    /** The series' {@code __name__}. */
    String seriesName();

    /**
     * The profile of the interval that just ended (called once per interval, on the sampling thread);
     * empty when there is nothing to report.
     */
    Optional<Profile> interval(long timeNanos, long durationNanos);

    /** A profile of the next {@code duration}, independent of the intervals (the HTTP endpoint). */
    Profile capture(Duration duration) throws InterruptedException;

    /**
     * A profile the source keeps rather than captures, named by one query parameter of its HTTP path (latency:
     * {@code baseline=previous_build}, {@code baseline=trailing}, {@code window=current}). Empty when it has none
     * of that name yet; IllegalArgumentException (with the message for the user) when the name means nothing.
     */
    default Optional<Profile> stored(String parameter, String value) {
        throw new IllegalArgumentException("no stored " + profileType() + " profiles");
    }

    /** Registers this source's metrics (served on {@code /metrics}); called once, before the first scrape. */
    void registerMetrics(PrometheusRegistry registry);

    /** Stops measuring; called after the last interval. */
    void close();
}
