package dev.loupe.unwinder.perfmap;

import dev.loupe.unwinder.proc.ProcStatus;
import dev.loupe.unwinder.runtime.RuntimeFrame;
import dev.loupe.unwinder.runtime.RuntimeProcess;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;

/**
 * The perf map of one process: {@code /proc/PID/root/tmp/perf-NSPID.map}, where NSPID is the pid the
 * process has in its own PID namespace (the last field of {@code NSpid:} in its status; a container's
 * process writes the file under its own pid, in its own /tmp). Read on a miss only — an address in
 * anonymous executable memory the table does not name — and then at most every {@link #REREAD_NANOS};
 * never on a timer. Opened by the {@link PerfMapRuntime} once per process and closed with it.
 *
 * <p>Thread-safe (its methods are synchronized): the sampling thread and the latency stacks' symbolizer name frames.
 */
final class ProcessPerfMap implements RuntimeProcess {
    static final long REREAD_NANOS = Duration.ofSeconds(1).toNanos();

    private final int pid;
    private final Path procRoot;
    private final PerfMapRuntime runtime;
    private final String jitPath;
    private PerfMapFile file;
    private boolean everRead;
    private long lastReadNanos;

    ProcessPerfMap(int pid, String exe, Path procRoot, PerfMapRuntime runtime) {
        this.pid = pid;
        this.procRoot = procRoot;
        this.runtime = runtime;
        this.jitPath = "[jit] " + exe;
    }

    /**
     * The perf map's name for {@code addr}, in the mapping {@code [jit] EXECUTABLE} (e.g. {@code [jit] node}), or
     * null. A miss reads the file if it was not read within {@link #REREAD_NANOS}, within the heap the runtime's other
     * maps leave.
     */
    @Override
    public synchronized RuntimeFrame code(long addr, boolean callSite, long now) {
        String name = file == null ? null : file.lookup(addr);
        if (name == null && !(everRead && now - lastReadNanos < REREAD_NANOS)) {
            everRead = true;
            lastReadNanos = now;
            read(runtime.allowance(this));
            name = file == null ? null : file.lookup(addr);
        }
        return name == null ? null : RuntimeFrame.of(name, jitPath);
    }

    synchronized long heapBytes() {
        return file == null ? 0 : file.heapBytes();
    }

    /** The file (null before the process's status was read), for tests. */
    synchronized PerfMapFile file() {
        return file;
    }

    @Override
    public void close() {
        runtime.closed(this);
    }

    private void read(long heapAllowance) {
        if (file == null && !open()) {
            return;
        }
        long entries = file.entriesAdded();
        long skipped = file.linesSkipped();
        long over = file.bytesOverCap();
        file.read(heapAllowance);
        runtime.entries.addAndGet(file.entriesAdded() - entries);
        runtime.linesSkipped.addAndGet(file.linesSkipped() - skipped);
        runtime.bytesOverCap.addAndGet(file.bytesOverCap() - over);
    }

    /** Finds the file from the process's status: its own-namespace pid and its uids. False if unreadable. */
    private boolean open() {
        Path dir = procRoot.resolve(Integer.toString(pid));
        int nsPid;
        int[] uids;
        try {
            ProcStatus status = ProcStatus.read(dir);
            nsPid = status.nsPid(pid);
            uids = status.uids();
        } catch (IOException | RuntimeException e) {
            return false; // gone, or a status that does not parse: tried again after REREAD_NANOS
        }
        file = new PerfMapFile(dir.resolve("root").resolve("tmp").resolve("perf-" + nsPid + ".map"), runtime.limits,
                uids.length == 0 ? null : uids);
        return true;
    }
}
