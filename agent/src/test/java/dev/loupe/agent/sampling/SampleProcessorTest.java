package dev.loupe.agent.sampling;

import dev.loupe.bpf.RawSample;
import dev.loupe.pprof.proto.Profile;
import dev.loupe.pprof.proto.Sample;
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

        @Override
        public void symbolizeUser(int pid, long start, long[] addrs, int count, List<Frame> out) {
            userPids.add(pid);
            names.symbolizeUser(pid, start, addrs, count, out);
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

    /** JIT code sits in anonymous memory: a frame there without a name is what asks a JVM for a new perf map. */
    @Test
    void unnamedFramesInAnonymousMemoryAreJitCode() {
        MappingRef libc = new MappingRef(0x7f0000000000L, 0x7f0000100000L, 0, "/usr/lib/x86_64-linux-gnu/libc.so.6", "ab", true);
        MappingRef anon = new MappingRef(0x7f1000000000L, 0x7f1010000000L, 0, "", null, false);
        MappingRef vdso = new MappingRef(0x7fff00000000L, 0x7fff00002000L, 0, "[vdso]", null, true);
        Frame kernelUnknown = new Frame(0xffffffff81000000L, null, null, true);
        Frame named = new Frame(0x7f0000001000L, libc, "read", false);
        Frame unnamedInFile = new Frame(0x7f0000002000L, libc, null, false); // a stripped library: no JIT
        Frame jit = new Frame(0x7f1000001000L, anon, null, false);
        Frame jitNamed = new Frame(0x7f1000002000L, anon, "long Spin.loop(long)", false); // from a perf map
        Frame nowhere = new Frame(0x12345L, null, null, false);
        assertTrue(SampleProcessor.hasUnnamedJitFrame(List.of(kernelUnknown, named, jit), 1));
        assertTrue(SampleProcessor.hasUnnamedJitFrame(List.of(named, nowhere), 0));
        assertFalse(SampleProcessor.hasUnnamedJitFrame(List.of(new Frame(0x7fff00000100L, vdso, null, false)), 0));
        MappingRef namedAnon = new MappingRef(0x7f2000000000L, 0x7f2000100000L, 0, "[anon:v8]", null, false);
        assertTrue(SampleProcessor.hasUnnamedJitFrame(List.of(new Frame(0x7f2000000100L, namedAnon, null, false)), 0));
        assertFalse(SampleProcessor.hasUnnamedJitFrame(List.of(kernelUnknown, named, unnamedInFile, jitNamed), 1),
                "kernel frames come before the user ones and are not looked at");
        assertFalse(SampleProcessor.hasUnnamedJitFrame(List.of(named, jit), 2));
    }
}
