package dev.loupe.agent.jvm;

import dev.loupe.agent.logging.LogCapture;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The scheduling: what runs when, with stand-ins for /proc and the JVMs and a clock the test moves. */
class JvmSymbolsTest {
    private static final long TICK = 10_000_000L;

    /** Stand-in JVMs: what each pid is, and what an attach gives; records the calls. */
    private static final class FakeJvms implements JvmSymbols.Jvms {
        final Map<Integer, Inspection> kinds = new HashMap<>();
        final List<Integer> inspected = new ArrayList<>();
        final List<Integer> attached = new ArrayList<>();
        HotSpotAttacher.Result next = new HotSpotAttacher.Result.Written(Path.of("/tmp/perf-1.map"), 42, false);

        @Override
        public Inspection inspect(int pid, long startTicks) {
            inspected.add(pid);
            return kinds.getOrDefault(pid, new Inspection.NotAJvm());
        }

        @Override
        public HotSpotAttacher.Result writePerfMap(JvmTarget target) {
            attached.add(target.pid());
            return next;
        }
    }

    private static Inspection jvm(int pid, long startTicks) {
        return new Inspection.Attachable(new JvmTarget(pid, startTicks, pid, 0, 0,
                new JavaRuntime("/usr/lib/jvm/temurin-25-jdk-amd64/lib/server/libjvm.so", "25.0.3", 25)));
    }

    private long now = 1_000_000_000L;
    private final FakeJvms jvms = new FakeJvms();
    private final JvmSymbols symbols = new JvmSymbols(jvms, Runnable::run, () -> now);

    @Test
    void aProcessIsLookedAtOnce() {
        for (int i = 0; i < 1000; i++) {
            symbols.consider(7, 5 * TICK);
            symbols.consider(8, 6 * TICK);
        }
        assertEquals(List.of(7, 8), jvms.inspected);
    }

    @Test
    void aReusedPidIsLookedAtAgain() {
        symbols.consider(7, 5 * TICK);
        symbols.consider(7, 5 * TICK);
        symbols.consider(7, 9 * TICK); // another process with pid 7
        assertEquals(List.of(7, 7), jvms.inspected);
    }

    @Test
    void newCodeRunsThePerfMapAtMostEveryThirtySeconds() {
        jvms.kinds.put(7, jvm(7, 5));
        symbols.consider(7, 5 * TICK);
        assertEquals(List.of(), jvms.attached, "nothing without a trigger: no timer");
        symbols.newCode(7, 5 * TICK);
        assertEquals(List.of(7), jvms.attached, "the first trigger runs at once");
        for (int s = 0; s < 29; s++) {
            now += TimeUnit.SECONDS.toNanos(1);
            symbols.newCode(7, 5 * TICK);
        }
        assertEquals(List.of(7), jvms.attached);
        now += TimeUnit.SECONDS.toNanos(1);
        symbols.newCode(7, 5 * TICK);
        assertEquals(List.of(7, 7), jvms.attached);
        now += TimeUnit.MINUTES.toNanos(10);
        assertEquals(List.of(7, 7), jvms.attached, "time alone triggers nothing");
    }

    @Test
    void notAJvmOrSkippedIsNeverAttached() {
        jvms.kinds.put(9, new Inspection.Skipped("pid 9 (java 11.0.2)", "Compiler.perfmap needs JDK 17 or later; older JVMs are not supported yet"));
        try (LogCapture log = new LogCapture(JvmSymbols.class.getName())) {
            for (int i = 0; i < 10; i++) {
                symbols.newCode(8, 6 * TICK);
                symbols.newCode(9, 7 * TICK);
                now += TimeUnit.MINUTES.toNanos(1);
            }
            assertEquals(List.of(), jvms.attached);
            assertEquals(List.of(8, 9), jvms.inspected);
            assertEquals(1, log.lines().size(), log.text());
            assertTrue(log.text().contains("jvm symbols: pid 9 (java 11.0.2): skipped: Compiler.perfmap needs JDK 17 or later;"
                    + " older JVMs are not supported yet"), log.text());
        }
    }

    @Test
    void oneInfoLinePerJvmAttached() {
        jvms.kinds.put(7, jvm(7, 5));
        try (LogCapture log = new LogCapture(JvmSymbols.class.getName())) {
            for (int i = 0; i < 3; i++) {
                symbols.newCode(7, 5 * TICK);
                now += TimeUnit.SECONDS.toNanos(31);
            }
            assertEquals(List.of(7, 7, 7), jvms.attached);
            List<String> info = log.lines().stream().filter(l -> l.contains("INFO")).toList();
            assertEquals(1, info.size(), log.text());
            assertTrue(info.get(0).contains("jvm symbols: pid 7 (java 25.0.3): Compiler.perfmap written, 42 lines"), info.get(0));
        }
    }

    @Test
    void aRefusalIsFinal() {
        jvms.kinds.put(7, jvm(7, 5));
        jvms.next = new HotSpotAttacher.Result.Refused("it does not catch SIGQUIT (started with -Xrs?) and has no attach listener: not signalled");
        try (LogCapture log = new LogCapture(JvmSymbols.class.getName())) {
            for (int i = 0; i < 5; i++) {
                symbols.newCode(7, 5 * TICK);
                now += TimeUnit.MINUTES.toNanos(10);
            }
            assertEquals(List.of(7), jvms.attached);
            assertTrue(log.text().contains("jvm symbols: pid 7 (java 25.0.3): skipped: it does not catch SIGQUIT"), log.text());
        }
    }

    @Test
    void failuresAreRetriedLaterThenGivenUp() {
        jvms.kinds.put(7, jvm(7, 5));
        jvms.next = new HotSpotAttacher.Result.Failed("timed out waiting for the reply");
        try (LogCapture log = new LogCapture(JvmSymbols.class.getName())) {
            symbols.newCode(7, 5 * TICK);
            now += TimeUnit.MINUTES.toNanos(4);
            symbols.newCode(7, 5 * TICK);
            assertEquals(List.of(7), jvms.attached, "not before 5 minutes");
            now += TimeUnit.MINUTES.toNanos(1);
            symbols.newCode(7, 5 * TICK);
            now += TimeUnit.MINUTES.toNanos(5);
            symbols.newCode(7, 5 * TICK);
            now += TimeUnit.MINUTES.toNanos(5);
            symbols.newCode(7, 5 * TICK);
            assertEquals(List.of(7, 7, 7), jvms.attached, "three tries, then no more");
            assertTrue(log.text().contains("skipped: Compiler.perfmap failed 3 times, the last: timed out waiting for the reply"),
                    log.text());
        }
    }

    @Test
    void aFullQueueLosesNothingForGood() {
        boolean[] full = {true};
        Executor ex = r -> {
            if (full[0]) {
                throw new RejectedExecutionException("full");
            }
            r.run();
        };
        JvmSymbols s = new JvmSymbols(jvms, ex, () -> now);
        jvms.kinds.put(7, jvm(7, 5));
        s.newCode(7, 5 * TICK);
        assertEquals(List.of(), jvms.inspected);
        full[0] = false;
        s.newCode(7, 5 * TICK); // the next sample asks again
        assertEquals(List.of(7), jvms.inspected);
        s.newCode(7, 5 * TICK);
        assertEquals(List.of(7), jvms.attached);
    }

    @Test
    void attachNowLogsWhatTheBackgroundDoes() {
        jvms.kinds.put(7, jvm(7, 5));
        try (LogCapture log = new LogCapture(JvmSymbols.class.getName())) {
            JvmSymbols.Outcome o = symbols.attachNow(7);
            assertEquals(JvmSymbols.Outcome.Kind.ATTACHED, o.kind());
            assertEquals("jvm symbols: pid 7 (java 25.0.3): Compiler.perfmap written, 42 lines", o.message());
            assertTrue(log.text().contains(o.message()), log.text());
        }
        assertEquals(JvmSymbols.Outcome.Kind.NOT_A_JVM, symbols.attachNow(8).kind());
    }
}
