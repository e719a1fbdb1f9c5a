package dev.loupe.it;

import dev.loupe.pprof.proto.Profile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 30: a lock-contended Java program's waits show the lock path. Four threads take one fair
 * {@code ReentrantLock} in turn and hold it while sleeping 2 ms ({@code holdLock}): each thread holds it a quarter of
 * the time and waits for it the other three quarters, parked in {@code ReentrantLock.lock} (the JVM's
 * {@code Unsafe.park}, a futex in the kernel). None of them runs for long, so each thread's off-CPU time is about its
 * wall time. The agent profiles the JVM at P = 1 with its code cache read from memory (no flags, no attach); the
 * workers' table-walked waits must be 75 % in the lock (±10 points), 25 % in {@code holdLock}'s sleep, the lock's
 * stack through {@code ReentrantLock.lock} to {@code LockContention.worker}, and their total about four times the
 * interval.
 *
 * <p>Go's {@code sync.Mutex} is not the target: a goroutine that waits for it is parked by Go's scheduler, and its
 * thread then waits in the scheduler ({@code runtime.futex} ← {@code runtime.stopm} ← {@code runtime.schedule} on the
 * g0 stack), so the thread's off-CPU stack never holds the goroutine's frames.
 */
class OffCpuLockTest {
    static final int WORKERS = 4;
    static final String SOURCE = """
            import java.util.concurrent.locks.ReentrantLock;

            public class LockContention {
                static final ReentrantLock LOCK = new ReentrantLock(true);

                static void holdLock() throws InterruptedException {
                    Thread.sleep(2);
                }

                static void worker() {
                    while (true) {
                        LOCK.lock();
                        try {
                            holdLock();
                        } catch (InterruptedException e) {
                            return;
                        } finally {
                            LOCK.unlock();
                        }
                    }
                }

                public static void main(String[] args) throws Exception {
                    Thread[] t = new Thread[%d];
                    for (int i = 0; i < t.length; i++) {
                        t[i] = new Thread(LockContention::worker, "worker-" + i);
                        t[i].start();
                    }
                    System.out.println("ready");
                    t[0].join();
                }
            }
            """.formatted(WORKERS);

    @TempDir
    Path dir;

    @Test
    void lockWaitsShowTheLockPathAndTheirShare() throws Exception {
        Path bin = Path.of(System.getProperty("java.home"), "bin");
        Files.writeString(dir.resolve("LockContention.java"), SOURCE);
        Process javac = new ProcessBuilder(bin.resolve("javac").toString(), "-d", dir.toString(),
                dir.resolve("LockContention.java").toString()).redirectErrorStream(true).start();
        assertEquals(0, javac.waitFor(), new String(javac.getInputStream().readAllBytes()));
        Process jvm = new ProcessBuilder(bin.resolve("java").toString(), "-cp", dir.toString(), "LockContention")
                .directory(dir.toFile()).redirectErrorStream(true).start();
        Path out = dir.resolve("profiles");
        String log;
        try {
            assertEquals("ready", new BufferedReader(new InputStreamReader(jvm.getInputStream())).readLine());
            try (AgentProcess agent = AgentProcess.start(dir, "--pid", Long.toString(jvm.pid()), "--off-cpu-threshold", "1",
                    "--duration", "17s", "--interval", "4s", "--output", out.toString(), "--http", "off",
                    "--jvm-code-cache", "on")) {
                assertEquals(0, agent.awaitExit(Duration.ofSeconds(120)), agent.log());
                log = agent.log();
            }
            assertTrue(jvm.isAlive(), "the agent never harms a target");
        } finally {
            Targets.kill(jvm);
        }
        List<Path> offcpu = Profiles.files(out).stream().filter(f -> f.getFileName().toString().startsWith("offcpu-")).toList();
        assertTrue(offcpu.size() >= 4, "four intervals or more: " + offcpu + "\n" + log);
        // The whole intervals after the first two (the JVM's code cache is read and its tables go into the kernel
        // during the first), not the last (--duration cuts it short).
        long duration = 0;
        long lock = 0;
        long hold = 0;
        long tabled = 0;
        long all = 0;
        long lockToWorker = 0;
        Map<String, Long> others = new TreeMap<>();
        for (Path f : offcpu.subList(2, offcpu.size() - 1)) {
            Profile p = Profiles.read(f);
            assertEquals(List.of(), dev.loupe.pprof.ParcaRules.violations(p));
            duration += p.getDurationNanos();
            List<Profiles.Stack> stacks = Profiles.stacks(p);
            for (int i = 0; i < stacks.size(); i++) {
                Profiles.Stack s = stacks.get(i);
                String thread = s.labels().getOrDefault("thread_comm", "");
                if (!thread.startsWith("worker-")) {
                    continue;
                }
                long ns = p.getSample(i).getValue(1);
                all += ns;
                if ("frame_pointers".equals(s.labels().get("unwind"))) {
                    continue;
                }
                tabled += ns;
                List<String> fs = s.functions();
                int lockAt = indexOf(fs, "ReentrantLock.lock");
                if (lockAt >= 0) {
                    lock += ns;
                    if (indexOf(fs.subList(lockAt, fs.size()), "LockContention.worker") >= 0
                            && fs.getFirst().equals("__schedule") && fs.stream().anyMatch(n -> n.contains("futex"))) {
                        lockToWorker += ns;
                    }
                } else if (indexOf(fs, "LockContention.holdLock") >= 0) {
                    hold += ns;
                } else {
                    others.merge(String.join(" <- ", fs), ns, Long::sum);
                }
            }
        }
        double lockShare = 100.0 * lock / Math.max(1, lock + hold);
        System.out.printf("off-CPU lock: workers %.1f %% of %d ms in ReentrantLock.lock, %.1f %% in holdLock; "
                        + "%.1f %% of the lock's time walked through futex to LockContention.worker; total %.2f x the interval; "
                        + "%.1f %% table-walked%n", lockShare, (lock + hold) / 1_000_000, 100.0 * hold / Math.max(1, lock + hold),
                100.0 * lockToWorker / Math.max(1, lock), (double) all / duration, 100.0 * tabled / Math.max(1, all));
        assertTrue(tabled >= 0.9 * all, "table-walked " + tabled + " of " + all + " ns");
        assertTrue(lock + hold >= 0.95 * tabled, "waits outside the lock and holdLock: " + (tabled - lock - hold) + " of "
                + tabled + " ns: " + top(others));
        assertTrue(Math.abs(lockShare - 75) <= 10, "the lock's share " + lockShare + " %");
        assertTrue(lockToWorker >= 0.95 * lock, "lock waits from __schedule through a futex and ReentrantLock.lock to "
                + "LockContention.worker: " + lockToWorker + " of " + lock + " ns");
        assertTrue(Math.abs(all - WORKERS * duration) <= 0.15 * WORKERS * duration, "the workers' off-CPU time "
                + all / 1_000_000 + " ms against " + WORKERS + " x " + duration / 1_000_000 + " ms");
    }

    /** The first frame whose name ends with {@code suffix} (Java frames are named Class.method, maybe with a package). */
    private static int indexOf(List<String> functions, String suffix) {
        for (int i = 0; i < functions.size(); i++) {
            if (functions.get(i).endsWith(suffix)) {
                return i;
            }
        }
        return -1;
    }

    private static String top(Map<String, Long> stacks) {
        List<Map.Entry<String, Long>> e = new ArrayList<>(stacks.entrySet());
        e.sort(Map.Entry.<String, Long>comparingByValue().reversed());
        return e.subList(0, Math.min(5, e.size())).toString();
    }
}
