package dev.loupe.agent;

import dev.loupe.agent.sampling.Agent;
import dev.loupe.agent.service.SdNotify;
import dev.loupe.agent.service.StatusLine;
import dev.loupe.agent.service.WatchdogGate;
import dev.loupe.agent.sink.RemoteSinkStats;
import dev.loupe.agent.sink.SinkStats;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * Loupe under systemd ({@code Type=notify}): {@code READY=1} once the BPF program is attached and the first
 * sample was read, a {@code STATUS=} line a person reads in {@code systemctl status} (every 10 s), {@code WATCHDOG=1} only while
 * the sampling loop polls and every sink's thread lives (so systemd restarts a wedged agent), and
 * {@code RELOADING=1}/{@code READY=1} around a reload, {@code STOPPING=1} at the end. Does nothing without
 * {@code $NOTIFY_SOCKET}.
 */
final class ServiceSupervisor implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(ServiceSupervisor.class.getName());
    private static final long TICK_MS = 1000;
    private static final long READY_CHECK_MS = 50;
    private static final long STATUS_EVERY_NANOS = TimeUnit.SECONDS.toNanos(10);
    /** A loop that completes no poll for this long is stuck (a poll waits at most ~100 ms for samples). */
    private static final Duration STALL_LIMIT = Duration.ofSeconds(10);
    /** A remote sink whose oldest spooled batch is older than this shows as DOWN. */
    private static final long BACKLOG_DOWN_NANOS = TimeUnit.MINUTES.toNanos(1);

    private final SdNotify notify;
    private final Agent agent;
    private final LongSupplier nanos;
    private final WatchdogGate gate;
    private final StatusLine statusLine;
    private final ScheduledExecutorService timer;
    private volatile boolean ready;
    private volatile java.util.concurrent.ScheduledFuture<?> readyCheck;
    private long lastStatusNanos;
    private String lastProblem = "";

    private ServiceSupervisor(SdNotify notify, Agent agent, LongSupplier nanos) {
        this.notify = notify;
        this.agent = agent;
        this.nanos = nanos;
        this.gate = notify.watchdogInterval().map(t -> new WatchdogGate(t, STALL_LIMIT, nanos)).orElse(null);
        this.statusLine = new StatusLine(nanos);
        this.timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "loupe-systemd");
            t.setDaemon(true);
            return t;
        });
    }

    /** Starts telling systemd about {@code agent} (a no-op when not under a notify service). */
    static ServiceSupervisor start(SdNotify notify, Agent agent, LongSupplier nanos) {
        ServiceSupervisor s = new ServiceSupervisor(notify, agent, nanos);
        if (notify.enabled()) {
            // Readiness is looked for often, so READY follows the first sample closely; the rest once a second.
            s.readyCheck = s.timer.scheduleWithFixedDelay(s::checkReady, 0, READY_CHECK_MS, TimeUnit.MILLISECONDS);
            s.timer.scheduleWithFixedDelay(s::tick, 0, TICK_MS, TimeUnit.MILLISECONDS);
        }
        return s;
    }

    boolean ready() {
        return ready;
    }

    private void checkReady() {
        if (!ready && agent.samplesProcessed() > 0) {
            ready = true;
            // Logged before READY=1, so the journal shows it before systemd's "Started".
            LOG.log(System.Logger.Level.INFO, "ready: the sampler is attached and the first sample was read");
            send("READY", notify::ready);
        }
        java.util.concurrent.ScheduledFuture<?> f = readyCheck;
        if (ready && f != null) {
            f.cancel(false);
        }
    }

    /*
     * Every second only counters (readiness, the watchdog); the full status, which reads the kernel's
     * statistics maps and every component's counters, only for the status line.
     */
    private void tick() {
        try {
            long now = nanos.getAsLong();
            if (ready && gate != null) {
                WatchdogGate.Decision d = gate.check(agent.polls(), agent.deadSinkThreads());
                if (d.ping()) {
                    send("WATCHDOG", notify::watchdog);
                }
                if (!d.problem().equals(lastProblem)) {
                    if (!d.healthy()) {
                        LOG.log(System.Logger.Level.ERROR, "not petting the watchdog: " + d.problem());
                    }
                    lastProblem = d.problem();
                }
            }
            if (now - lastStatusNanos >= STATUS_EVERY_NANOS || lastStatusNanos == 0) {
                lastStatusNanos = now;
                Agent.Status st = agent.status();
                String line = statusLine.next(st.sampler().samples(), (int) st.symbolizer().processes(), sinkStates(st));
                send("STATUS", () -> notify.status(line));
            }
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "systemd notification tick failed: " + e);
        }
    }

    static List<StatusLine.SinkState> sinkStates(Agent.Status st) {
        List<StatusLine.SinkState> out = new ArrayList<>();
        for (SinkStats s : st.sinks()) {
            if (s.remote().isPresent()) {
                RemoteSinkStats r = s.remote().get();
                boolean behind = r.spooledBatches() > 0 && r.oldestAgeNanos() > BACKLOG_DOWN_NANOS;
                out.add(new StatusLine.SinkState(s.sink(), !behind, behind
                        ? r.spooledBatches() + " batches spooled, oldest " + TimeUnit.NANOSECONDS.toSeconds(r.oldestAgeNanos()) + " s"
                        : ""));
            } else {
                out.add(new StatusLine.SinkState(s.sink(), s.failed() == 0, s.failed() == 0 ? "" : s.failed() + " failed writes"));
            }
        }
        return out;
    }

    /** Before a reload reads the configuration. */
    void reloading() {
        send("RELOADING", notify::reloading);
    }

    /** After a reload, applied or refused: the service is ready again. */
    void reloaded() {
        if (ready) {
            send("READY", notify::ready);
        }
    }

    @Override
    public void close() {
        timer.shutdownNow();
        send("STOPPING", notify::stopping);
    }

    @FunctionalInterface
    private interface Send {
        boolean send() throws IOException;
    }

    private static void send(String what, Send s) {
        try {
            s.send();
        } catch (IOException e) {
            LOG.log(System.Logger.Level.WARNING, "sd_notify " + what + " failed: " + e.getMessage());
        }
    }
}
