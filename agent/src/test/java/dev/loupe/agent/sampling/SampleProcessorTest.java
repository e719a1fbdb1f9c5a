package dev.loupe.agent.sampling;

import dev.loupe.bpf.RawSample;
import dev.loupe.pprof.proto.Profile;
import dev.loupe.pprof.proto.Sample;
import dev.loupe.unwinder.ehframe.StopReason;
import dev.loupe.unwinder.symbolize.Frame;
import dev.loupe.unwinder.symbolize.MappingRef;
import dev.loupe.unwinder.symbolize.Symbolizer;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class SampleProcessorTest {
    /** The fake symbolizer of AgentTest, recording which pids it was asked to read. */
    private static final class RecordingSymbolizer implements Symbolizer {
        final AgentTest.FakeSymbolizer names = new AgentTest.FakeSymbolizer();
        final List<Integer> userPids = new ArrayList<>();
        int hints; // what symbolizeUser returns

        @Override
        public int symbolizeUser(int pid, long start, long[] addrs, int count, List<Frame> out) {
            userPids.add(pid);
            names.symbolizeUser(pid, start, addrs, count, out);
            return hints;
        }

        @Override
        public void symbolizeKernel(long[] addrs, int count, List<Frame> out) {
            names.symbolizeKernel(addrs, count, out);
        }

        @Override
        public Stats stats() {
            return null;
        }

        @Override
        public void close() {}
    }

    /**
     * A process outside the agent's PID namespace has host pid 7, which inside is another process's pid: its
     * samples never reach the symbolizer's user side (no /proc/7 read), and carry only its comm and the
     * namespace label, its kernel frames and one frame in place of its user stack (even when it had none).
     */
    @Test
    void samplesOutsideThePidNamespaceAreNeverLookedUpByPid() {
        RecordingSymbolizer symbolizer = new RecordingSymbolizer();
        SampleProcessor processor = new SampleProcessor(symbolizer, pid -> "0::/\n", System::nanoTime);
        ProfileWindow window = new ProfileWindow(1_000_000L, 1_700_000_000_000_000_000L, 0);
        processor.open(window);
        processor.accept(new RawSample(7, 7, 4107, 4107, 0, "inside", "inside", 0, 0, 0, new long[0], new long[] {0x1100}));
        processor.accept(new RawSample(0, 0, 7, 8, 1, "host_app", "host_worker", 0, 0, RawSample.PID_OUTSIDE,
                new long[] {0xffffffff81000010L, 0xffffffff81000020L}, new long[0]));
        processor.accept(new RawSample(0, 0, 7, 7, 1, "host_app", "host_app", 0, 0, RawSample.PID_OUTSIDE,
                new long[0], new long[0]));
        assertEquals(List.of(7), symbolizer.userPids, "only the inside process's pid was read");
        assertEquals(3, processor.processed());
        assertEquals(0, processor.emptyStacks());

        Profile p = window.finish(1_000_000_000L);
        Map<Long, Long> functionOfLocation = new HashMap<>();
        p.getLocationList().forEach(l -> functionOfLocation.put(l.getId(), l.getLine(0).getFunctionId()));
        Map<Long, String> functionNames = new HashMap<>();
        p.getFunctionList().forEach(f -> functionNames.put(f.getId(), p.getStringTable((int) f.getName())));
        Map<String, String> byStack = new LinkedHashMap<>();
        for (Sample s : p.getSampleList()) {
            List<String> fns = new ArrayList<>();
            for (long id : s.getLocationIdList()) {
                fns.add(functionNames.get(functionOfLocation.get(id)));
            }
            List<String> labels = new ArrayList<>();
            s.getLabelList().forEach(l -> labels.add(p.getStringTable((int) l.getKey()) + "="
                    + (l.getStr() != 0 ? p.getStringTable((int) l.getStr()) : Long.toString(l.getNum()))));
            byStack.put(String.join(";", fns), String.join(",", labels));
        }
        assertEquals(Map.of(
                "fn_1100", "pid=7,tid=7,comm=inside,thread_comm=inside",
                "k_ffffffff81000010;k_ffffffff81000020;[outside the agent's PID namespace]", "comm=host_app,pid_namespace=outside",
                "[outside the agent's PID namespace]", "comm=host_app,pid_namespace=outside"), byStack);
    }

    /**
     * An off-CPU wait goes to the off-CPU windows only, weighted 1/P (P = 0.25: 4 waits, 4 × its nanoseconds), with the
     * CPU labels and its state; a CPU sample goes to the CPU windows only.
     */
    @Test
    void offCpuWaitsAreWeightedAndLabelledAndKeptApartFromCpuSamples() {
        SampleProcessor processor = new SampleProcessor(new RecordingSymbolizer(), pid -> "0::/\n", System::nanoTime);
        ProfileWindow cpu = new ProfileWindow(1_000_000L, 1_700_000_000_000_000_000L, 0);
        ProfileWindow offCpu = ProfileWindow.offCpu(1_700_000_000_000_000_000L, 0);
        processor.open(cpu);
        processor.openOffCpu(offCpu);
        processor.offCpuProbability(0.25);
        processor.accept(new RawSample(7, 8, 7, 8, 0, "app", "worker", 0, 0, RawSample.OFF_CPU, new long[0],
                new long[] {0x1100}, RawSample.NO_MAPPINGS, dev.loupe.bpf.OffCpuState.SLEEPING.code(), 3_000_000L));
        processor.accept(new RawSample(7, 8, 7, 8, 0, "app", "worker", 0, 0, 0, new long[0], new long[] {0x1200}));
        Profile waits = offCpu.finish(1_000_000_000L);
        Profile samples = cpu.finish(1_000_000_000L);
        assertEquals(1, waits.getSampleCount());
        assertEquals(List.of(4L, 12_000_000L), waits.getSample(0).getValueList());
        List<String> labels = new ArrayList<>();
        waits.getSample(0).getLabelList().forEach(l -> labels.add(waits.getStringTable((int) l.getKey()) + "="
                + (l.getStr() != 0 ? waits.getStringTable((int) l.getStr()) : Long.toString(l.getNum()))));
        assertEquals(List.of("pid=7", "tid=8", "comm=app", "thread_comm=worker", "state=sleeping"), labels);
        assertEquals("events", waits.getStringTable((int) waits.getSampleType(0).getType()));
        assertEquals("off_cpu", waits.getStringTable((int) waits.getSampleType(1).getType()));
        assertEquals(1, samples.getSampleCount(), "the CPU sample only");
        assertEquals("fn_1200", samples.getStringTable((int) samples.getFunction(0).getName()));
        assertEquals(1, processor.offCpuProcessed());
        assertEquals(1, processor.processed());
    }

    /** JIT code sits in anonymous memory: a frame there without a name is what asks a JVM for a new perf map. */
    private static final long START = 123_000_000_000L;

    /** Observers hear of every sampled process, and of unknown code exactly when the symbolizer says it saw some. */
    @Test
    void observersAreToldOfEachSampleAndOfUnknownCodeFromTheSymbolizersHints() {
        RecordingSymbolizer sym = new RecordingSymbolizer();
        SampleProcessor p = new SampleProcessor(sym, pid -> "0::/\n", System::nanoTime);
        List<String> told = new ArrayList<>();
        p.addObserver((pid, start, unknown) -> told.add(pid + ":" + start + ":" + unknown));
        p.accept(new RawSample(41, 41, 41, 41, 0, "a", "a", 0, START, 0, new long[0], new long[] {0x1100}));
        sym.hints = Symbolizer.UNNAMED_CODE;
        p.accept(new RawSample(42, 42, 42, 42, 0, "b", "b", 0, START, 0, new long[0], new long[] {0x1100}));
        sym.hints = Symbolizer.ENDS_IN_RUNTIME_CODE; // only a hint for the tables, with a stop for want of unwind info
        p.accept(new RawSample(43, 43, 43, 43, 0, "c", "c", 0, START, 0, new long[0], new long[] {0x1100}));
        assertEquals(List.of("41:" + START + ":false", "42:" + START + ":true", "43:" + START + ":false"), told);
    }

    @Test
    void aWalkStoppedForWantOfUnwindInfoInRuntimeCodeIsUnknownCode() {
        int noInfo = StopReason.NO_UNWIND_INFO.code();
        assertTrue(SampleProcessor.stoppedInRuntimeCode(noInfo, Symbolizer.ENDS_IN_RUNTIME_CODE));
        assertTrue(SampleProcessor.stoppedInRuntimeCode(noInfo, Symbolizer.ENDS_IN_RUNTIME_CODE | Symbolizer.UNNAMED_CODE));
        assertFalse(SampleProcessor.stoppedInRuntimeCode(noInfo, 0), "stopped in native code");
        assertFalse(SampleProcessor.stoppedInRuntimeCode(StopReason.TRUNCATED.code(), Symbolizer.ENDS_IN_RUNTIME_CODE));
        assertFalse(SampleProcessor.stoppedInRuntimeCode(-1, Symbolizer.ENDS_IN_RUNTIME_CODE), "not stopped");
    }

    /**
     * An exit (the kernel's record, after the process's samples) releases the process's label lists (every thread's)
     * and its cgroup entry, and tells observers and exit listeners once, after the grace in which a late sample of
     * the exit path still finds the process as it was without being announced as a new sighting; another process with
     * the pid, or another process altogether, keeps its state.
     */
    @Test
    void anExitReleasesTheProcessAfterItsGraceAndOnlyThatProcess() {
        RecordingSymbolizer sym = new RecordingSymbolizer();
        java.util.concurrent.atomic.AtomicLong clock = new java.util.concurrent.atomic.AtomicLong(5_000_000_000L);
        List<Integer> cgroupReads = new ArrayList<>();
        SampleProcessor p = new SampleProcessor(sym, pid -> {
            cgroupReads.add(pid);
            return "0::/system.slice/app.service\n";
        }, clock::get);
        List<String> told = new ArrayList<>();
        p.addObserver(new SampleObserver() {
            @Override
            public void sampled(int pid, long start, boolean unknown) {
                told.add("sampled " + pid);
            }

            @Override
            public void exited(int pid, long start) {
                told.add("exited " + pid + ":" + start);
            }
        });
        List<String> listened = new ArrayList<>();
        p.addExitListener((pid, start) -> listened.add(pid + ":" + start));
        long other = START + 1_000_000_000L;
        p.accept(new RawSample(7, 7, 7, 7, 0, "app", "app", 0, START, 0, new long[0], new long[] {0x1100}));
        p.accept(new RawSample(7, 8, 7, 8, 0, "app", "worker", 0, START, 0, new long[0], new long[] {0x1100}));
        p.accept(new RawSample(9, 9, 9, 9, 0, "other", "other", 0, START, 0, new long[0], new long[] {0x1100}));
        assertEquals(2, p.cachedLabelProcesses());
        assertEquals(3, p.cachedLabelThreads());
        assertEquals(2, p.cachedCgroups());

        p.processExited(7, START);
        p.processExited(9, other); // an earlier process with pid 9: nothing of the one sampled goes
        p.accept(new RawSample(7, 8, 7, 8, 0, "app", "worker", 0, START, 0, new long[] {0xffffffff81000010L}, new long[0]));
        clock.addAndGet(SampleProcessor.EXIT_GRACE.toNanos() - 1);
        p.releaseExited();
        assertEquals(List.of(), listened, "within the grace");
        assertEquals(2, p.cachedLabelProcesses());
        assertEquals(2, p.pendingExits());
        clock.addAndGet(1);
        p.releaseExited();
        assertEquals(List.of("7:" + START, "9:" + other), listened);
        assertEquals(List.of("sampled 7", "sampled 7", "sampled 9", "exited 7:" + START, "exited 9:" + other), told,
                "the late sample of the exit path is not a sighting; each exit told once");
        assertEquals(1, p.cachedLabelProcesses(), "pid 9's process stays");
        assertEquals(1, p.cachedLabelThreads());
        assertEquals(1, p.cachedCgroups());
        assertEquals(0, p.pendingExits());
        assertEquals(2, p.exitsReleased());
        p.releaseExited();
        assertEquals(2, listened.size(), "released once");
        assertEquals(List.of(7, 9), cgroupReads, "one cgroup read per process, none for its second thread or the late sample");
    }
}
