package dev.loupe.unwinder.symbolize;

import dev.loupe.unwinder.proc.MapEntry;
import dev.loupe.unwinder.proc.ProcMaps;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * The perf map of one process: {@code /proc/PID/root/tmp/perf-NSPID.map}, where NSPID is the pid the
 * process has in its own PID namespace (the last field of {@code NSpid:} in its status; a container's
 * process writes the file under its own pid, in its own /tmp). Read on a miss only — an address in
 * anonymous executable memory the table does not name — and then at most every {@link #REREAD_NANOS};
 * never on a timer. Held by the process's {@link ProcessState}, so it goes when the state does (idle
 * sweep, pid reuse).
 *
 * <p>Not thread-safe: used by the symbolizing thread.
 */
final class ProcessPerfMap {
    static final long REREAD_NANOS = Duration.ofSeconds(1).toNanos();

    /** Counters over every process, for {@link Symbolizer.Stats}. */
    static final class Counters {
        final AtomicLong entries = new AtomicLong();
        final AtomicLong linesSkipped = new AtomicLong();
        final AtomicLong bytesOverCap = new AtomicLong();
    }

    private final int pid;
    private final Path procRoot;
    private final PerfMapFile.Limits limits;
    private final Counters counters;
    private PerfMapFile file;
    private String jitPath = "[jit]";
    private boolean everRead;
    private boolean found;
    private long lastReadNanos;

    ProcessPerfMap(int pid, Path procRoot, PerfMapFile.Limits limits, Counters counters) {
        this.pid = pid;
        this.procRoot = procRoot;
        this.limits = limits;
        this.counters = counters;
    }

    /** Whether perf maps may name code in this mapping: executable memory not backed by a file. */
    static boolean jitCandidate(MapEntry m) {
        return m.executable() && !m.fileBacked() && !m.path().equals("[vdso]") && !m.path().equals("[vsyscall]");
    }

    /**
     * The perf map's name for {@code addr}, or null. A miss reads the file if it was not read within
     * {@link #REREAD_NANOS}; {@code heapAllowance} is asked then (the bytes this table may hold).
     */
    String lookup(long addr, long now, LongSupplier heapAllowance) {
        String name = file == null ? null : file.lookup(addr);
        if (name != null || (everRead && now - lastReadNanos < REREAD_NANOS)) {
            return name;
        }
        everRead = true;
        lastReadNanos = now;
        read(heapAllowance.getAsLong());
        return file == null ? null : file.lookup(addr);
    }

    /** Whether the process has a perf map (one was read at least once). */
    boolean found() {
        return found;
    }

    /** The mapping name for its JIT code: {@code [jit] EXECUTABLE}, e.g. {@code [jit] node}. */
    String jitPath() {
        return jitPath;
    }

    long heapBytes() {
        return file == null ? 0 : file.heapBytes();
    }

    /** The file (null before the process's status was read), for tests. */
    PerfMapFile file() {
        return file;
    }

    private void read(long heapAllowance) {
        if (file == null && !open()) {
            return;
        }
        long entries = file.entriesAdded();
        long skipped = file.linesSkipped();
        long over = file.bytesOverCap();
        PerfMapFile.Outcome o = file.read(heapAllowance);
        if (o != PerfMapFile.Outcome.MISSING && o != PerfMapFile.Outcome.REFUSED) {
            found = true;
        }
        counters.entries.addAndGet(file.entriesAdded() - entries);
        counters.linesSkipped.addAndGet(file.linesSkipped() - skipped);
        counters.bytesOverCap.addAndGet(file.bytesOverCap() - over);
    }

    /** Finds the file from the process's status: its own-namespace pid and its uids. False if unreadable. */
    private boolean open() {
        Path dir = procRoot.resolve(Integer.toString(pid));
        String status;
        try {
            status = ProcMaps.readText(dir.resolve("status"));
        } catch (IOException | RuntimeException e) {
            return false; // gone: tried again after REREAD_NANOS
        }
        int nsPid = nsPid(status, pid);
        int[] uids = uids(status);
        try {
            Path exe = Files.readSymbolicLink(dir.resolve("exe"));
            String name = exe.getFileName() == null ? "" : exe.getFileName().toString();
            if (name.endsWith(" (deleted)")) {
                name = name.substring(0, name.length() - " (deleted)".length());
            }
            if (!name.isEmpty()) {
                jitPath = "[jit] " + name;
            }
        } catch (IOException | RuntimeException e) {
            // a kernel thread, a gone process, no permission: the mapping is "[jit]"
        }
        file = new PerfMapFile(dir.resolve("root").resolve("tmp").resolve("perf-" + nsPid + ".map"), limits,
                uids.length == 0 ? null : uids);
        return true;
    }

    /** The last pid of the {@code NSpid:} line (the process's own namespace); {@code pid} without one. */
    static int nsPid(String status, int pid) {
        String[] f = fields(status, "NSpid:");
        if (f.length == 0) {
            return pid;
        }
        try {
            return Integer.parseInt(f[f.length - 1]);
        } catch (NumberFormatException e) {
            return pid;
        }
    }

    /** The real, effective, saved and filesystem uids of the {@code Uid:} line (empty without one). */
    static int[] uids(String status) {
        String[] f = fields(status, "Uid:");
        int[] out = new int[f.length];
        try {
            for (int i = 0; i < f.length; i++) {
                out[i] = Integer.parseUnsignedInt(f[i]);
            }
        } catch (NumberFormatException e) {
            return new int[0];
        }
        return out;
    }

    private static String[] fields(String status, String key) {
        int at = status.startsWith(key) ? 0 : status.indexOf("\n" + key);
        if (at < 0) {
            return new String[0];
        }
        int from = at == 0 ? key.length() : at + 1 + key.length();
        int end = status.indexOf('\n', from);
        String v = status.substring(from, end < 0 ? status.length() : end).trim();
        return v.isEmpty() ? new String[0] : v.split("[\\t ]+");
    }
}
