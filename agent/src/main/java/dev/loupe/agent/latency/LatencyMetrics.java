package dev.loupe.agent.latency;

import dev.loupe.bpf.LatencyHistogram;
import dev.loupe.bpf.LatencyStats;

import java.math.BigDecimal;
import java.util.Collection;
import java.util.Map;

/**
 * Prometheus text of the latency probes: one histogram series per probed function, cumulative since its
 * probe was attached (present at 0 from then on), and the probes' counters.
 *
 * <p>Bucket bounds are 2^k µs in seconds written as plain decimals ({@code 0.000001} … {@code 1073.741824}),
 * the examples; Java's {@code Double.toString} would write the first ten as {@code 1.0E-6} …
 * {@code 5.12E-4}. Prometheus parses both, but {@code le} is matched as a string in selectors, so one
 * exponent-free form is used throughout.
 */
final class LatencyMetrics {
    static final String HISTOGRAM = "loupe_function_duration_seconds";
    private static final String[] LE = new String[LatencyHistogram.BUCKETS];

    static {
        for (int k = 0; k < LatencyHistogram.FINITE_BUCKETS; k++) {
            LE[k] = le(k);
        }
        LE[LatencyHistogram.FINITE_BUCKETS] = "+Inf";
    }

    private LatencyMetrics() {}

    /** The {@code le} label value of finite bucket {@code k}. */
    static String le(int k) {
        return BigDecimal.valueOf(LatencyHistogram.upperBoundSeconds(k)).stripTrailingZeros().toPlainString();
    }

    /**
     * @param functions  every function probed since start (detached ones keep their last counts)
     * @param cumulative counts per probe id; a function without an entry is shown at 0
     */
    static void render(StringBuilder b, Collection<ProbedFunction> functions, Map<Integer, LatencyHistogram> cumulative,
                       LatencyStats stats, int attached, long problems, long profileGroupsDropped) {
        b.append("# HELP ").append(HISTOGRAM)
                .append(" Duration of calls of probed functions (entry to return), measured in the kernel.\n");
        b.append("# TYPE ").append(HISTOGRAM).append(" histogram\n");
        for (ProbedFunction f : functions) {
            LatencyHistogram h = cumulative.get(f.id());
            String labels = "binary=\"" + escape(f.binary()) + "\",function=\"" + escape(f.function()) + "\"";
            long running = 0;
            for (int k = 0; k < LatencyHistogram.BUCKETS; k++) {
                running += h == null ? 0 : h.bucket(k);
                b.append(HISTOGRAM).append("_bucket{").append(labels).append(",le=\"").append(LE[k]).append("\"} ")
                        .append(running).append('\n');
            }
            b.append(HISTOGRAM).append("_sum{").append(labels).append("} ")
                    .append(h == null ? "0" : seconds(h.sumNanos())).append('\n');
            b.append(HISTOGRAM).append("_count{").append(labels).append("} ").append(h == null ? 0 : h.count()).append('\n');
        }
        gauge(b, "loupe_probe_functions_attached", "Functions measured by latency probes now.", attached);
        counter(b, "loupe_probe_problems_total", "Probe patterns or functions that could not be probed (logged with the reason).", problems);
        if (stats == null) {
            return;
        }
        counter(b, "loupe_probe_calls_entered_total", "Calls of probed functions entered.", stats.entries());
        counter(b, "loupe_probe_calls_measured_total", "Calls of probed functions measured into a histogram.", stats.exits());
        counter(b, "loupe_probe_thread_migrations_total",
                "Measured calls that returned on a different thread than they entered (Go goroutines moving between threads).",
                stats.threadMigrations());
        counter(b, "loupe_probe_reentries_total",
                "Go function entries run again for one call (stack growth or preemption in the prologue), collapsed.", stats.reentries());
        counter(b, "loupe_probe_stale_entries_total",
                "Native calls whose exit was missed (longjmp, exceptions), replaced by a later call.", stats.staleReplaced());
        counter(b, "loupe_probe_unmatched_exits_total", "Returns with no recorded entry.", stats.unmatchedExits());
        counter(b, "loupe_probe_in_flight_full_total", "Calls not measured because the in-flight table was full.", stats.inFlightFull());
        counter(b, "loupe_probe_goid_read_errors_total", "Go probe hits whose goroutine could not be read.", stats.gReadErrors());
        counter(b, "loupe_probe_unconfigured_hits_total", "Probe hits of no active probe.", stats.unconfigured());
        counter(b, "loupe_probe_groups_full_total",
                "Measured calls left out of the latency profile's per-process/goroutine/stack groups (kernel table full; histograms stay exact).",
                stats.groupsFull() + profileGroupsDropped);
        counter(b, "loupe_probe_stacks_full_total",
                "Calls whose caller stack was not stored (kernel stack table full; shown as [stack unavailable]).", stats.stacksFull());
        counter(b, "loupe_probe_aged_out_total",
                "Calls in flight too long (goroutines or threads that never returned), forgotten.", stats.agedOut());
    }

    /** Nanoseconds as seconds, exactly (no binary rounding). */
    static String seconds(long nanos) {
        return BigDecimal.valueOf(nanos, 9).stripTrailingZeros().toPlainString();
    }

    static String escape(String v) {
        return v.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n");
    }

    private static void gauge(StringBuilder b, String name, String help, long value) {
        b.append("# HELP ").append(name).append(' ').append(help).append('\n');
        b.append("# TYPE ").append(name).append(" gauge\n");
        b.append(name).append(' ').append(value).append('\n');
    }

    private static void counter(StringBuilder b, String name, String help, long value) {
        b.append("# HELP ").append(name).append(' ').append(help).append('\n');
        b.append("# TYPE ").append(name).append(" counter\n");
        b.append(name).append(' ').append(value).append('\n');
    }
}
