package dev.loupe.unwinder.proc;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The one reader of /proc/PID/stat and /proc/PID/maps, shared by the symbolizer and the unwind-table
 * uploader. It keeps the last consistent view of each process (start time, executable mappings) and tells
 * listeners when a process appears (a first read, or its pid now belongs to a new process), changes its
 * mappings (dlopen, exec) or exits, so a consumer can push state for a process when it appears instead of
 * pulling it when a sample arrives. Processes are learnt of by {@link #read} (a consumer needs them),
 * {@link #scan} (a periodic look at /proc) and {@link #processExited(int, long)} (the kernel's exit events).
 *
 * <p>Thread-safe: reads run without a global lock; listeners are called on the reading thread and must
 * be quick (queue work, do not do it).
 */
public final class ProcessRegistry {
    /** /proc/PID/stat counts start time in clock ticks (USER_HZ = 100 on every x86-64 kernel). */
    public static final long NANOS_PER_TICK = 10_000_000L;

    /** A process as last read: its start (clock ticks since boot) and its executable mappings in maps order. */
    public record Snapshot(int pid, long startTicks, List<MapEntry> executable, int malformedLines) {
        public Snapshot {
            executable = List.copyOf(executable);
        }
    }

    /** Told of processes appearing, changing and exiting. Default methods do nothing. */
    public interface Listener {
        default void appeared(Snapshot process) {}

        default void mappingsChanged(Snapshot process) {}

        default void exited(int pid, long startTicks) {}
    }

    private final Path procRoot;
    private final ConcurrentHashMap<Integer, Snapshot> processes = new ConcurrentHashMap<>();
    private final List<Listener> listeners = new CopyOnWriteArrayList<>();
    private final int maxProcesses;
    private final AtomicLong reads = new AtomicLong();
    private final AtomicLong failures = new AtomicLong();

    public ProcessRegistry(Path procRoot, int maxProcesses) {
        this.procRoot = procRoot;
        this.maxProcesses = maxProcesses;
    }

    public static ProcessRegistry host() {
        return new ProcessRegistry(Path.of("/proc"), 1 << 16);
    }

    public Path procRoot() {
        return procRoot;
    }

    public void addListener(Listener l) {
        listeners.add(l);
    }

    public void removeListener(Listener l) {
        listeners.remove(l);
    }

    /**
     * Reads the process now: stat, maps, stat again (the pid must not be reused in between). Updates the
     * view and tells listeners what changed. IOException: gone, not readable, or reused twice meanwhile.
     */
    public Snapshot read(int pid) throws IOException {
        return read(pid, -1);
    }

    /**
     * As {@link #read(int)} for the process that started at {@code expectedStartTicks} (a sample said so; -1: not
     * known): maps, then stat once. If stat then names that start, the maps were that process's (a pid is reused only
     * after its process exited, and a later process cannot have the earlier start); otherwise stat, maps, stat.
     */
    public Snapshot read(int pid, long expectedStartTicks) throws IOException {
        reads.incrementAndGet();
        try {
            if (expectedStartTicks >= 0) {
                ProcMaps.Parsed maps = ProcMaps.readCounted(procRoot, pid);
                if (startTicks(pid) == expectedStartTicks) {
                    return publish(pid, expectedStartTicks, maps);
                }
            }
            for (int attempt = 0; ; attempt++) {
                long start = startTicks(pid);
                ProcMaps.Parsed maps = ProcMaps.readCounted(procRoot, pid);
                if (startTicks(pid) != start) {
                    if (attempt == 0) {
                        continue;
                    }
                    throw new IOException("pid " + pid + " reused while reading its maps");
                }
                return publish(pid, start, maps);
            }
        } catch (IOException | RuntimeException e) {
            failures.incrementAndGet();
            throw e instanceof IOException io ? io : new IOException(e.getMessage(), e);
        }
    }

    /** The view of the process as just read; listeners are told what changed. */
    private Snapshot publish(int pid, long start, ProcMaps.Parsed maps) {
        List<MapEntry> exec = new ArrayList<>();
        for (MapEntry e : maps.entries()) {
            if (e.executable()) {
                exec.add(e);
            }
        }
        Snapshot now = new Snapshot(pid, start, exec, maps.malformedLines());
        Snapshot before = processes.put(pid, now);
        if (processes.size() > maxProcesses) {
            processes.remove(pid); // bounded: an untracked process is still answered, just not kept
        }
        if (before == null || before.startTicks() != start) {
            if (before != null) {
                listeners.forEach(l -> l.exited(pid, before.startTicks()));
            }
            listeners.forEach(l -> l.appeared(now));
        } else if (!before.executable().equals(exec)) {
            listeners.forEach(l -> l.mappingsChanged(now));
        }
        return now;
    }

    /** The last view of the process, without reading /proc. */
    public Optional<Snapshot> cached(int pid) {
        return Optional.ofNullable(processes.get(pid));
    }

    /** Field 22 of /proc/PID/stat; parsed after the last ')' because comm may hold spaces and parens. */
    public long startTicks(int pid) throws IOException {
        return parseStartTicks(ProcMaps.readText(procRoot.resolve(Integer.toString(pid)).resolve("stat")), pid);
    }

    /** Field 22 (starttime) of a /proc/PID/stat text; IOException naming the pid if the text is not what the kernel writes. */
    static long parseStartTicks(String stat, int pid) throws IOException {
        int close = stat.lastIndexOf(')');
        if (close < 0 || close + 2 > stat.length()) {
            throw new IOException("malformed /proc/" + pid + "/stat");
        }
        // Skip 19 space-separated fields after "comm) " without splitting the whole line (read twice per refresh).
        int i = close + 2;
        for (int field = 0; field < 19 && i >= 0; field++) {
            i = stat.indexOf(' ', i);
            i = i < 0 ? -1 : i + 1;
        }
        int end = i < 0 ? -1 : stat.indexOf(' ', i);
        if (i < 0 || end < 0) {
            throw new IOException("malformed /proc/" + pid + "/stat");
        }
        try {
            return Long.parseLong(stat, i, end, 10); // fields after comm start at 3 (state): 22 - 3 = 19
        } catch (NumberFormatException e) {
            throw new IOException("malformed /proc/" + pid + "/stat: " + e.getMessage());
        }
    }

    /**
     * The pids in /proc now. Known processes that are gone are forgotten and reported as exited; new ones
     * are only listed (a consumer reads those it wants).
     */
    public Set<Integer> scan() throws IOException {
        Set<Integer> alive = new java.util.HashSet<>();
        try (DirectoryStream<Path> d = Files.newDirectoryStream(procRoot)) {
            for (Path p : d) {
                String n = p.getFileName().toString();
                if (!n.isEmpty() && Character.isDigit(n.charAt(0))) {
                    try {
                        alive.add(Integer.parseInt(n));
                    } catch (NumberFormatException ignored) {
                        // not a pid
                    }
                }
            }
        }
        for (Integer pid : List.copyOf(processes.keySet())) {
            if (!alive.contains(pid)) {
                processExited(pid);
            }
        }
        return alive;
    }

    /** A process exited (found by a scan): forget it and tell listeners. */
    public void processExited(int pid) {
        Snapshot gone = processes.remove(pid);
        if (gone != null) {
            listeners.forEach(l -> l.exited(pid, gone.startTicks()));
        }
    }

    /**
     * The process {@code pid} that started at {@code startTicks} exited (an exit event, which names the exact
     * process): its view is forgotten unless the pid already names a newer process, and listeners are told even if
     * this registry never read it (a consumer may hold state for it all the same).
     */
    public void processExited(int pid, long startTicks) {
        processes.computeIfPresent(pid, (k, s) -> s.startTicks() == startTicks ? null : s);
        listeners.forEach(l -> l.exited(pid, startTicks));
    }

    /** Reads of /proc/PID/{stat,maps} and how many failed (gone, permission). */
    public long reads() {
        return reads.get();
    }

    public long failures() {
        return failures.get();
    }

    public int size() {
        return processes.size();
    }
}
