package dev.loupe.it.bench;

import dev.loupe.unwinder.proc.ProcessRegistry;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The CPU time of one process, all threads included. Where it can, the process is moved into a cgroup of
 * its own and the cgroup's counter is read: nanoseconds (cgroup v1 {@code cpuacct.usage}) or microseconds
 * (v2 {@code cpu.stat usage_usec}), and threads that already exited still count. Otherwise
 * {@code /proc/PID/stat} utime + stime, in 10 ms ticks: an agent using 0.4 % of a core gets 6 ticks in a
 * 15 s run, too coarse to compare two builds.
 */
final class CpuMeter implements AutoCloseable {

    private final long pid;
    private final Path group; // null: /proc ticks
    private final boolean v1;

    private CpuMeter(long pid, Path group, boolean v1) {
        this.pid = pid;
        this.group = group;
        this.v1 = v1;
    }

    /** Starts metering {@code pid}: what it used before this call is not separated out, so take differences. */
    static CpuMeter of(long pid) {
        Path v1Root = Path.of("/sys/fs/cgroup/cpuacct");
        Path v2Root = Files.exists(Path.of("/sys/fs/cgroup/cgroup.controllers")) ? Path.of("/sys/fs/cgroup")
                : Path.of("/sys/fs/cgroup/unified");
        for (boolean v1 : new boolean[] {true, false}) {
            Path root = v1 ? v1Root : v2Root;
            if (!Files.exists(root.resolve(v1 ? "cpuacct.usage" : "cgroup.procs"))) {
                continue;
            }
            Path g = root.resolve("loupe-bench-" + pid);
            try {
                Files.createDirectories(g);
                Files.writeString(g.resolve("cgroup.procs"), Long.toString(pid));
                CpuMeter m = new CpuMeter(pid, g, v1);
                m.nanos(); // readable?
                return m;
            } catch (IOException | RuntimeException e) {
                try {
                    Files.deleteIfExists(g);
                } catch (IOException ignored) {
                    // still holds the process; removed with it by close() of a later run, or by hand
                }
            }
        }
        return new CpuMeter(pid, null, false);
    }

    /** CPU time used so far, in nanoseconds. */
    long nanos() {
        try {
            if (group == null) {
                return sinceStartNanos(pid);
            }
            if (v1) {
                return Long.parseLong(Files.readString(group.resolve("cpuacct.usage")).trim());
            }
            for (String line : Files.readAllLines(group.resolve("cpu.stat"))) {
                if (line.startsWith("usage_usec ")) {
                    return Long.parseLong(line.substring(11).trim()) * 1000;
                }
            }
            throw new IllegalStateException("no usage_usec in " + group.resolve("cpu.stat"));
        } catch (IOException e) {
            throw new IllegalStateException("cannot read the CPU time of " + pid + ": " + e.getMessage(), e);
        }
    }

    /** All the CPU time {@code pid} used since it started: utime + stime from /proc/PID/stat, in 10 ms ticks. */
    static long sinceStartNanos(long pid) throws IOException {
        String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
        String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        return (Long.parseLong(f[11]) + Long.parseLong(f[12])) * ProcessRegistry.NANOS_PER_TICK; // fields 14 and 15
    }

    /** What the figures come from, for the report. */
    String source() {
        return group == null ? "/proc/PID/stat (10 ms ticks)" : v1 ? "cgroup v1 cpuacct.usage (ns)" : "cgroup v2 cpu.stat (us)";
    }

    /** Removes the cgroup; call it after the process exited (a cgroup with a process in it cannot go). */
    @Override
    public void close() {
        if (group != null) {
            try {
                Files.deleteIfExists(group);
            } catch (IOException e) {
                System.err.println("could not remove " + group + ": " + e.getMessage());
            }
        }
    }
}
