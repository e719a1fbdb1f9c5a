package dev.loupe.agent.jvm;

import dev.loupe.agent.sampling.SampleObserver;
import dev.loupe.unwinder.proc.ProcStatus;
import dev.loupe.unwinder.proc.ProcessRegistry;

import java.io.IOException;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * JIT symbols for HotSpot JVMs without any JVM flag: the sampling thread names the processes it sees
 * ({@link #consider}) and says when a JVM's sample has JIT frames nobody could name ({@link #newCode}); both are a
 * map lookup. Everything else runs on one background thread of its own: finding out whether a process is a
 * HotSpot JVM that may be attached to ({@link JvmInspector}, once per process) and running {@code Compiler.perfmap}
 * in it ({@link HotSpotAttacher}) when its code is new, at most every {@link #RERUN_NANOS 30 s} per JVM and never
 * on a timer: a JVM whose frames all have names is left alone. The JVM writes {@code /tmp/perf-<nspid>.map} in
 * its file system, where the perf-map reader finds it. One log line per JVM attached, and one per JVM skipped with
 * the reason; later rewrites are logged at debug level.
 */
public final class JvmSymbols implements SampleObserver {
    private static final System.Logger LOG = System.getLogger(JvmSymbols.class.getName());
    /** The shortest time between two {@code Compiler.perfmap} runs in one JVM. */
    static final long RERUN_NANOS = TimeUnit.SECONDS.toNanos(30);
    /** After a failed run (the JVM was busy, the reply late), the next try waits this long. */
    static final long RETRY_NANOS = TimeUnit.MINUTES.toNanos(5);
    static final int MAX_FAILURES = 3;
    static final int MAX_TRACKED = 8192;
    private static final int QUEUE = 64;

    /** What the background work needs: a test puts stand-ins here. */
    interface Jvms {
        Inspection inspect(int pid, long startTicks);

        HotSpotAttacher.Result writePerfMap(JvmTarget target);

        /**
         * Whether the process is known not to be a JVM without reading anything (the shared registry's view of it
         * maps no libjvm): most processes of a busy host, told apart on the poll thread instead of a task each.
         */
        default boolean knownNotAJvm(int pid, long startTicks) {
            return false;
        }
    }

    private enum State { PENDING, NOT_A_JVM, GONE, SKIPPED, JVM }

    /** A process as the poll thread tracks it; the background thread fills in what it learns. */
    private static final class Entry {
        final int pid;
        final long startTicks;
        volatile State state = State.PENDING;
        volatile JvmTarget target;
        /** A task for it is queued or running: nothing else is queued. */
        volatile boolean busy = true;
        /** When the next run may start (monotonic nanos). */
        volatile long due;
        /** Unknown code was sampled while it was being classified (poll thread sets, background thread reads). */
        volatile boolean attachOnceClassified;
        /** Background thread only. */
        int failures;
        boolean logged;

        Entry(int pid, long startTicks) {
            this.pid = pid;
            this.startTicks = startTicks;
        }
    }

    /** The poll thread's alone: no lock on the sampling path. */
    private final Map<Integer, Entry> entries = new HashMap<>();
    private final Jvms jvms;
    private final java.util.concurrent.Executor executor;
    private final LongSupplier nanos;

    JvmSymbols(Jvms jvms, java.util.concurrent.Executor executor, LongSupplier nanos) {
        this.jvms = jvms;
        this.executor = executor;
        this.nanos = nanos;
    }

    /** The agent's: its own background thread, the shared process registry, the agent's credentials. */
    public static JvmSymbols start(ProcessRegistry registry) throws IOException {
        return new JvmSymbols(system(registry), backgroundThread(), System::nanoTime);
    }

    static Jvms system(ProcessRegistry registry) throws IOException {
        return jvms(registry, HotSpotAttacher.system(registry));
    }

    /** The real inspection with the agent's credentials, and {@code attacher}. */
    static Jvms jvms(ProcessRegistry registry, HotSpotAttacher attacher) throws IOException {
        ProcStatus self = JvmInspector.self(registry.procRoot());
        JvmInspector inspector = new JvmInspector(registry, self.euid(), self.egid());
        return new Jvms() {
            @Override
            public Inspection inspect(int pid, long startTicks) {
                return inspector.inspect(pid, startTicks);
            }

            @Override
            public HotSpotAttacher.Result writePerfMap(JvmTarget target) {
                return attacher.writePerfMap(target);
            }

            @Override
            public boolean knownNotAJvm(int pid, long startTicks) {
                ProcessRegistry.Snapshot s = registry.cached(pid).orElse(null);
                if (s == null || startTicks < 0 || s.startTicks() != startTicks) {
                    return false;
                }
                // JvmInspector's own test, on the same view: it would say NotAJvm.
                return JavaRuntime.libjvm(s.executable().stream().map(dev.loupe.unwinder.proc.MapEntry::path).toList()).isEmpty();
            }
        };
    }

    static ExecutorService backgroundThread() {
        return new ThreadPoolExecutor(1, 1, 0, TimeUnit.MILLISECONDS, new ArrayBlockingQueue<>(QUEUE), r -> {
            Thread t = new Thread(r, "loupe-jvm-symbols");
            t.setDaemon(true);
            return t;
        });
    }

    /**
     * A sampled process: asked for a new perf map if it showed unknown code ({@link #newCode}). A process whose samples
     * show none is not looked at: only a JIT's unnamed code needs a perf map, and inspecting every sampled process cost
     * a churn of short processes ~0.1 ms of this thread each.
     */
    @Override
    public void sampled(int pid, long processStartNs, boolean unknownCode) {
        if (unknownCode) {
            newCode(pid, processStartNs);
        }
    }

    /** Processes tracked now (/metrics: read from another thread, a possibly stale size). */
    public long tracked() {
        return entries.size();
    }

    /** The process exited: its entry goes (a task for it still queued finds it gone and does nothing of note). */
    @Override
    public void exited(int pid, long processStartNs) {
        Entry e = entries.get(pid);
        if (e != null && (e.startTicks < 0 || e.startTicks == ticks(processStartNs))) {
            entries.remove(pid);
        }
    }

    public void consider(int pid) {
        entry(pid, -1);
    }

    /**
     * A process seen in a sample. Cheap for a process seen before (one map lookup); a new one is queued to be
     * looked at on the background thread. Poll thread only.
     *
     * @param processStartNs its start, ns since boot (the sample's; 0 if unknown)
     */
    public void consider(int pid, long processStartNs) {
        entry(pid, ticks(processStartNs));
    }

    /**
     * A sample of {@code pid} had JIT frames without names: if it is a HotSpot JVM that may be attached to, and its
     * last {@code Compiler.perfmap} is at least 30 s old and not running, one is queued. Poll thread only.
     */
    public void newCode(int pid, long processStartNs) {
        Entry e = entry(pid, ticks(processStartNs));
        if (e != null && e.state == State.PENDING) {
            e.attachOnceClassified = true; // its first unknown code: a perf map as soon as it is known to be a JVM
            return;
        }
        if (e == null || e.state != State.JVM || e.busy || nanos.getAsLong() - e.due < 0) {
            return;
        }
        e.busy = true;
        if (!submit(() -> attach(e))) {
            e.busy = false;
        }
    }

    private static long ticks(long processStartNs) {
        return processStartNs > 0 ? processStartNs / ProcessRegistry.NANOS_PER_TICK : -1;
    }

    private Entry entry(int pid, long startTicks) {
        if (pid <= 0) {
            return null;
        }
        Entry e = entries.get(pid);
        if (e != null && (startTicks < 0 || e.startTicks < 0 || e.startTicks == startTicks)) {
            return e;
        }
        if (entries.size() >= MAX_TRACKED) {
            evict();
        }
        Entry fresh = new Entry(pid, startTicks);
        if (jvms.knownNotAJvm(pid, startTicks)) {
            fresh.state = State.NOT_A_JVM;
            fresh.busy = false;
            entries.put(pid, fresh);
            return fresh;
        }
        if (!submit(() -> classify(fresh))) {
            return null; // queue full: the next sample asks again
        }
        entries.put(pid, fresh);
        return fresh;
    }

    /** Forgets what needs no memory first (not JVMs, gone), then everything idle. */
    private void evict() {
        entries.values().removeIf(e -> !e.busy && (e.state == State.NOT_A_JVM || e.state == State.GONE));
        if (entries.size() >= MAX_TRACKED) {
            entries.values().removeIf(e -> !e.busy);
        }
    }

    private boolean submit(Runnable task) {
        try {
            executor.execute(task);
            return true;
        } catch (RejectedExecutionException full) {
            return false;
        }
    }

    private void classify(Entry e) {
        try {
            switch (jvms.inspect(e.pid, e.startTicks)) {
                case Inspection.NotAJvm n -> e.state = State.NOT_A_JVM;
                case Inspection.Gone g -> e.state = State.GONE;
                case Inspection.Skipped s -> {
                    LOG.log(System.Logger.Level.INFO, "jvm symbols: " + s.who() + ": skipped: " + s.reason());
                    e.state = State.SKIPPED;
                }
                case Inspection.Attachable a -> {
                    e.target = a.target();
                    e.due = nanos.getAsLong();
                    e.state = State.JVM;
                    if (e.attachOnceClassified) {
                        attach(e); // on this thread, as a queued attach would run
                    }
                }
            }
        } catch (RuntimeException ex) {
            LOG.log(System.Logger.Level.WARNING, "jvm symbols: pid " + e.pid + ": skipped: inspecting it failed: " + ex, ex);
            e.state = State.SKIPPED;
        } finally {
            e.busy = false;
        }
    }

    private void attach(Entry e) {
        try {
            Outcome o = report(e.target, jvms.writePerfMap(e.target), e);
            e.due = nanos.getAsLong() + (o.kind() == Outcome.Kind.FAILED ? RETRY_NANOS : RERUN_NANOS);
            switch (o.kind()) {
                case ATTACHED, FAILED -> { }
                case GONE -> e.state = State.GONE;
                default -> e.state = State.SKIPPED;
            }
        } catch (RuntimeException ex) {
            LOG.log(System.Logger.Level.WARNING, "jvm symbols: " + e.target.describe() + ": skipped: " + ex, ex);
            e.state = State.SKIPPED;
        } finally {
            e.busy = false;
        }
    }

    /**
     * What one attach came to. {@code message} is the log line (null for a process that is no JVM or gone).
     */
    public record Outcome(Kind kind, String message) {
        public enum Kind { ATTACHED, SKIPPED, FAILED, NOT_A_JVM, GONE }
    }

    /**
     * Looks at {@code pid} and, if it is a HotSpot JVM that may be attached to, runs {@code Compiler.perfmap} in
     * it now, on the calling thread, logging as the background thread does. For tests and one-off use.
     */
    public Outcome attachNow(int pid) {
        Entry e = new Entry(pid, -1);
        return switch (jvms.inspect(pid, -1)) {
            case Inspection.NotAJvm n -> new Outcome(Outcome.Kind.NOT_A_JVM, null);
            case Inspection.Gone g -> new Outcome(Outcome.Kind.GONE, null);
            case Inspection.Skipped s -> {
                String line = "jvm symbols: " + s.who() + ": skipped: " + s.reason();
                LOG.log(System.Logger.Level.INFO, line);
                yield new Outcome(Outcome.Kind.SKIPPED, line);
            }
            case Inspection.Attachable a -> report(a.target(), jvms.writePerfMap(a.target()), e);
        };
    }

    /** Logs an attach's result (the first success of a JVM at info, later ones at debug) and says what it was. */
    private static Outcome report(JvmTarget t, HotSpotAttacher.Result r, Entry e) {
        String who = "jvm symbols: " + t.describe() + ": ";
        return switch (r) {
            case HotSpotAttacher.Result.Written w -> {
                e.failures = 0;
                String line = who + "Compiler.perfmap written, " + w.lines() + " lines";
                LOG.log(e.logged ? System.Logger.Level.DEBUG : System.Logger.Level.INFO,
                        line + (w.signalled() ? " (its attach listener started by SIGQUIT)" : ""));
                e.logged = true;
                yield new Outcome(Outcome.Kind.ATTACHED, line);
            }
            case HotSpotAttacher.Result.Refused x -> {
                String line = who + "skipped: " + x.reason();
                LOG.log(System.Logger.Level.INFO, line);
                yield new Outcome(Outcome.Kind.SKIPPED, line);
            }
            case HotSpotAttacher.Result.Failed f -> {
                e.failures++;
                if (e.failures >= MAX_FAILURES) {
                    String line = who + "skipped: Compiler.perfmap failed " + e.failures + " times, the last: " + f.reason();
                    LOG.log(System.Logger.Level.WARNING, line);
                    yield new Outcome(Outcome.Kind.SKIPPED, line);
                }
                String line = who + "Compiler.perfmap failed (tried again in "
                        + TimeUnit.NANOSECONDS.toMinutes(RETRY_NANOS) + " min if its code is new): " + f.reason();
                LOG.log(System.Logger.Level.WARNING, line);
                yield new Outcome(Outcome.Kind.FAILED, line);
            }
            case HotSpotAttacher.Result.Gone g -> new Outcome(Outcome.Kind.GONE, null);
        };
    }

    /** Stops the background thread; an attach under way is interrupted (its trigger file is removed). */
    @Override
    public void close() {
        if (executor instanceof ExecutorService s) {
            s.shutdownNow();
            try {
                s.awaitTermination(2, TimeUnit.SECONDS);
            } catch (InterruptedException ex) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
