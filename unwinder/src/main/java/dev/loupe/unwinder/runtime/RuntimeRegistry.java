package dev.loupe.unwinder.runtime;

import dev.loupe.unwinder.proc.MapEntry;
import dev.loupe.unwinder.proc.ProcessRegistry;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

/**
 * The runtimes of each process, opened once per process start and shared by every consumer: the symbolizers and the
 * unwind table uploader get the same {@link RuntimeProcess} (one reader of a JVM, not one per consumer, so names and
 * tables cannot disagree). A runtime is looked for again when a process's mappings change (a JVM's launcher maps
 * libjvm.so after it starts); one that cannot be opened is not tried again for that process start. Entries go when
 * the process registry sees the process exit, when the pid is reused, or after {@link #IDLE_NANOS} unused. The agent
 * itself is never opened (its own JIT would keep changing what it reads).
 *
 * <p>Thread-safe.
 */
public final class RuntimeRegistry implements ProcessRegistry.Listener, AutoCloseable {
    private static final System.Logger LOG = System.getLogger(RuntimeRegistry.class.getName());
    static final long IDLE_NANOS = Duration.ofMinutes(2).toNanos();
    private static final long SWEEP_NANOS = Duration.ofSeconds(10).toNanos();

    private final List<ManagedRuntime> runtimes;
    private final Path procRoot;
    private final LongSupplier nanoTime;
    private final ConcurrentHashMap<Integer, Entry> processes = new ConcurrentHashMap<>();
    private final long self = ProcessHandle.current().pid();
    private volatile long lastSweep;

    /** Listens to {@code registry} for exits. */
    public RuntimeRegistry(List<ManagedRuntime> runtimes, ProcessRegistry registry, LongSupplier nanoTime) {
        this.runtimes = List.copyOf(runtimes);
        this.procRoot = registry.procRoot();
        this.nanoTime = nanoTime;
        this.lastSweep = nanoTime.getAsLong();
        registry.addListener(this);
    }

    /** No runtime: every frame is native. */
    public static RuntimeRegistry none(ProcessRegistry registry) {
        return new RuntimeRegistry(List.of(), registry, System::nanoTime);
    }

    public List<ManagedRuntime> runtimes() {
        return runtimes;
    }

    /**
     * The runtimes process {@code pid} (started at {@code startTicks}) runs, detected from {@code executable} and
     * opened now if they were not yet for this process start; {@link ProcessRuntimes#NONE} when it runs none.
     */
    public ProcessRuntimes of(int pid, long startTicks, List<MapEntry> executable) {
        return of(pid, startTicks, executable, false);
    }

    /**
     * As {@link #of}, from the mappings a sample carried rather than the process's maps: only runtimes that
     * {@link ManagedRuntime#opensFromSampledMappings open from them} are looked for; the others wait for {@link #of}.
     */
    public ProcessRuntimes ofSampled(int pid, long startTicks, List<MapEntry> sampled) {
        return of(pid, startTicks, sampled, true);
    }

    private ProcessRuntimes of(int pid, long startTicks, List<MapEntry> executable, boolean sampled) {
        if (runtimes.isEmpty() || pid == self) {
            return ProcessRuntimes.NONE;
        }
        long now = nanoTime.getAsLong();
        sweep(now);
        Entry e = processes.compute(pid, (k, old) -> {
            if (old != null && old.startTicks == startTicks) {
                return old;
            }
            if (old != null) {
                old.close();
            }
            return new Entry(startTicks, runtimes.size());
        });
        e.accessed = now;
        return e.attach(pid, executable, sampled);
    }

    /** Counters of every runtime, prefixed with its name. */
    public Map<String, Long> counters() {
        Map<String, Long> out = new java.util.TreeMap<>();
        for (ManagedRuntime r : runtimes) {
            r.counters().forEach((k, v) -> out.put(r.name() + "." + k, v));
        }
        return out;
    }

    /** Processes with an entry (tests, /metrics). */
    public int size() {
        return processes.size();
    }

    @Override
    public void exited(int pid, long startTicks) {
        Entry e = processes.get(pid);
        if (e != null && e.startTicks == startTicks && processes.remove(pid, e)) {
            e.close();
        }
    }

    private void sweep(long now) {
        if (now - lastSweep < SWEEP_NANOS) {
            return;
        }
        lastSweep = now;
        processes.forEach((pid, e) -> {
            if (now - e.accessed >= IDLE_NANOS && processes.remove(pid, e)) {
                e.close();
            }
        });
    }

    @Override
    public void close() {
        processes.forEach((pid, e) -> {
            if (processes.remove(pid, e)) {
                e.close();
            }
        });
    }

    private String exe(int pid) {
        try {
            Path link = Files.readSymbolicLink(procRoot.resolve(Integer.toString(pid)).resolve("exe"));
            String name = link.getFileName() == null ? "" : link.getFileName().toString();
            return name.endsWith(" (deleted)") ? name.substring(0, name.length() - " (deleted)".length()) : name;
        } catch (IOException | RuntimeException e) {
            return ""; // gone or a kernel thread: the runtime's open says so
        }
    }

    /** One process start: per runtime, not looked at yet, opened, or given up on. */
    private final class Entry {
        final long startTicks;
        final RuntimeProcess[] opened;
        final boolean[] failed;
        volatile long accessed;
        volatile ProcessRuntimes attached = ProcessRuntimes.NONE;
        boolean closed;

        Entry(long startTicks, int n) {
            this.startTicks = startTicks;
            this.opened = new RuntimeProcess[n];
            this.failed = new boolean[n];
        }

        synchronized ProcessRuntimes attach(int pid, List<MapEntry> executable, boolean sampled) {
            if (closed) {
                return ProcessRuntimes.NONE;
            }
            boolean changed = false;
            String exe = null;
            for (int i = 0; i < opened.length; i++) {
                if (opened[i] != null || failed[i] || sampled && !runtimes.get(i).opensFromSampledMappings()
                        || !runtimes.get(i).detect(executable)) {
                    continue;
                }
                if (exe == null) {
                    exe = exe(pid);
                }
                try {
                    Optional<RuntimeProcess> p = runtimes.get(i).open(pid, exe.isEmpty() ? "?" : exe, executable);
                    opened[i] = p.orElse(null);
                    failed[i] = p.isEmpty();
                    changed |= p.isPresent();
                } catch (IOException e) {
                    return attached; // gone: nothing more to open
                } catch (RuntimeException e) {
                    failed[i] = true;
                    LOG.log(System.Logger.Level.WARNING, "runtime " + runtimes.get(i).name() + ": cannot open pid " + pid + ": " + e, e);
                }
            }
            if (changed) {
                List<RuntimeProcess> ps = new ArrayList<>();
                List<ManagedRuntime> rs = new ArrayList<>();
                for (int i = 0; i < opened.length; i++) {
                    if (opened[i] != null) {
                        ps.add(opened[i]);
                        rs.add(runtimes.get(i));
                    }
                }
                attached = new ProcessRuntimes(rs, ps);
            }
            return attached;
        }

        synchronized void close() {
            closed = true;
            attached = ProcessRuntimes.NONE;
            for (int i = 0; i < opened.length; i++) {
                if (opened[i] != null) {
                    try {
                        opened[i].close();
                    } catch (RuntimeException e) {
                        LOG.log(System.Logger.Level.DEBUG, "closing a runtime: " + e);
                    }
                    opened[i] = null;
                }
            }
        }
    }
}
