package dev.loupe.unwinder.symbolize;

import dev.loupe.unwinder.ehframe.UnwindRule;
import dev.loupe.unwinder.proc.MapEntry;
import dev.loupe.unwinder.proc.ProcessRegistry;
import dev.loupe.unwinder.proc.Vdso;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * Symbolizes from /proc, composing one part per job: {@link ProcessTable} (each process's executable
 * mappings and when to re-read them), {@link BinaryCache} (symbol tables of mapped files, by file identity,
 * with {@link DebugSymbolFiles}), {@link VdsoSymbols}, {@link KernelSymbols.Loader} (kallsyms) and, per
 * process, {@link ProcessPerfMap} (JIT code named by {@code /tmp/perf-PID.map}). This class walks the
 * addresses and makes the frames.
 *
 * <p>Threading: symbolize* run on one thread (the poll thread); the counters and caches that
 * {@link #stats()} reads are safe to read from any thread.
 *
 * <p>Memory: the binary cache is bounded by weight, but a cached process state also holds its binaries;
 * an evicted binary stays reachable until that state's next refresh ({@link ProcessState#REFRESH_NANOS}).
 */
final class ProcSymbolizer implements Symbolizer {
    private static final System.Logger LOG = System.getLogger(ProcSymbolizer.class.getName());

    private final ProcessTable processes;
    private final DebugSymbolFiles debugFiles;
    private final BinaryCache binaries;
    private final VdsoSymbols vdso;
    private final KernelSymbols.Loader kernel;
    private final Path procRoot;
    private volatile boolean readJvmMemory = true;
    private final LongSupplier nanoTime;
    private final PerfMapFile.Limits perfMapLimits;
    private final long perfMapTotalBytes;
    private final ProcessPerfMap.Counters perfMapCounters = new ProcessPerfMap.Counters();
    private final AtomicLong frames = new AtomicLong();
    private final AtomicLong unresolved = new AtomicLong();
    private boolean internalErrorLogged;

    /** All processes' perf maps together hold at most this much heap (each also within {@link PerfMapFile.Limits#DEFAULT}). */
    static final long PERF_MAP_TOTAL_BYTES = 32L << 20;

    ProcSymbolizer(Options o, ProcessRegistry registry) {
        this(o, registry, PerfMapFile.Limits.DEFAULT, PERF_MAP_TOTAL_BYTES);
    }

    ProcSymbolizer(Options o, ProcessRegistry registry, PerfMapFile.Limits perfMapLimits, long perfMapTotalBytes) {
        this.procRoot = o.procRoot();
        this.nanoTime = o.nanoTime();
        this.perfMapLimits = perfMapLimits;
        this.perfMapTotalBytes = perfMapTotalBytes;
        this.processes = new ProcessTable(registry, o.nanoTime());
        this.debugFiles = new DebugSymbolFiles(o.procRoot(), o.maxCacheBytes());
        this.binaries = new BinaryCache(o.procRoot(), o.maxCacheBytes(), o.nanoTime(), debugFiles);
        this.vdso = new VdsoSymbols(o.procRoot());
        this.kernel = new KernelSymbols.Loader(o.kallsyms(), o.nanoTime());
    }

    @Override
    public Symbolizer readJvmMemory(boolean on) {
        readJvmMemory = on;
        return this;
    }

    // ---------------- user space ----------------

    @Override
    public void symbolizeUser(int pid, long processStartNs, long[] addrs, int count, List<Frame> out) {
        int n = Math.max(0, Math.min(count, addrs.length));
        int base = out.size();
        try {
            long startTicks = processStartNs > 0 ? processStartNs / ProcessRegistry.NANOS_PER_TICK : -1;
            ProcessState proc = processes.lookup(pid, startTicks);
            for (int i = 0; i < n; i++) {
                if (UnwindRule.isJavaMethodFrame(addrs[i])) {
                    out.add(interpretedJava(pid, proc, addrs[i]));
                    continue;
                }
                long addr = i == 0 ? addrs[i] : addrs[i] - 1; // return address -> inside the call
                int m = proc == null ? -1 : proc.find(addr);
                if (m < 0 && proc != null) {
                    proc = processes.rereadOnMiss(pid, proc, startTicks);
                    m = proc.find(addr);
                }
                Frame f = m < 0 ? new Frame(addr, null, null, false) : resolve(pid, proc, m, addr, i > 0);
                if (f.function() == null) {
                    unresolved.incrementAndGet();
                }
                out.add(f);
            }
            frames.addAndGet(n);
        } catch (RuntimeException e) {
            // A bug, not bad input (that is handled above): keep every frame as an address, say so once.
            bareFrames(e, addrs, n, out, base, false);
        }
    }

    private void bareFrames(RuntimeException e, long[] addrs, int n, List<Frame> out, int base, boolean kernel) {
        out.subList(base, out.size()).clear();
        for (int i = 0; i < n; i++) {
            out.add(new Frame(i == 0 ? addrs[i] : addrs[i] - 1, null, null, kernel));
        }
        frames.addAndGet(n);
        unresolved.addAndGet(n);
        if (!internalErrorLogged) {
            internalErrorLogged = true;
            LOG.log(System.Logger.Level.WARNING, "symbolizer failed; frames kept as addresses", e);
        }
    }

    /** {@code callSite}: addr is a caller's return address moved back into its call. */
    private Frame resolve(int pid, ProcessState proc, int idx, long addr, boolean callSite) {
        MapEntry m = proc.mapping(idx);
        Binary bin = proc.binary(idx);
        if (bin == null) {
            bin = binary(pid, m);
            proc.resolved(idx, bin, new MappingRef(m.start(), m.end(), m.offset(), m.path(), bin.buildId(), bin.hasFunctions()));
        }
        String fn = null;
        List<String> inlined = List.of();
        if (bin instanceof Binary.Loaded l) {
            long vaddr = l.elf().fileOffsetToVaddr(addr - m.start() + m.offset());
            if (vaddr != -1) {
                fn = l.symbols().lookup(vaddr);
            }
        } else if (bin == Binary.ANONYMOUS && ProcessPerfMap.jitCandidate(m)) {
            // A JVM's own names first: the same "pkg.Class.method" as its interpreted frames, before and after any
            // perf map (whose lines read "long pkg.Class.method(long)").
            List<String> java = compiledJava(pid, proc, idx, m, addr, callSite);
            if (java != null) {
                fn = java.getLast();
                inlined = java.subList(0, java.size() - 1);
            } else {
                fn = jit(pid, proc, idx, m, addr);
            }
        }
        return new Frame(addr, proc.ref(idx), fn, false, inlined);
    }

    /**
     * An interpreter frame the walker reported as its {@code Method*}: named by the JVM's own metadata, in the
     * process's {@code [interpreted] EXE} mapping (the tagged values' range), so that a profile tells interpreted
     * frames from {@code [jit] EXE} ones; "[interpreted Java method]" if the JVM cannot be read or the pointer is stale.
     */
    private Frame interpretedJava(int pid, ProcessState proc, long frame) {
        JavaFrames java = proc == null || !readJvmMemory ? null : proc.java(procRoot, pid);
        String name = java == null ? null : java.method(UnwindRule.javaMethod(frame));
        if (name == null) {
            unresolved.incrementAndGet();
        }
        return new Frame(frame, java == null ? null : java.interpretedMapping(),
                name == null ? "[interpreted Java method]" : name, false);
    }

    /**
     * JIT code no perf map names, in a HotSpot JVM: the compiled method or stub whose code holds it, after the methods
     * inlined into it there (innermost first); null if none.
     */
    private List<String> compiledJava(int pid, ProcessState proc, int idx, MapEntry m, long addr, boolean callSite) {
        JavaFrames java = readJvmMemory ? proc.java(procRoot, pid) : null;
        if (java == null) {
            return null;
        }
        List<String> fn = java.compiled(addr, callSite, nanoTime);
        if (fn != null && !java.jitPath().equals(proc.ref(idx).path())) {
            proc.resolved(idx, Binary.ANONYMOUS, new MappingRef(m.start(), m.end(), m.offset(), java.jitPath(), null, true));
        }
        return fn;
    }

    /**
     * JIT code: named by the process's perf map, if it writes one; then its mappings are named for the
     * runtime ({@code [jit] node}) rather than left without a name.
     */
    private String jit(int pid, ProcessState proc, int idx, MapEntry m, long addr) {
        ProcessPerfMap map = proc.perfMap();
        if (map == null) {
            map = new ProcessPerfMap(pid, procRoot, perfMapLimits, perfMapCounters);
            proc.perfMap(map);
        }
        ProcessPerfMap pm = map;
        String fn = pm.lookup(addr, nanoTime.getAsLong(),
                () -> perfMapTotalBytes - (processes.perfMapBytes() - pm.heapBytes())); // what the others leave
        if (pm.found() && !pm.jitPath().equals(proc.ref(idx).path())) {
            proc.resolved(idx, Binary.ANONYMOUS, new MappingRef(m.start(), m.end(), m.offset(), pm.jitPath(), null, true));
        }
        return fn;
    }

    private Binary binary(int pid, MapEntry m) {
        if (m.path().equals(Vdso.MAPPING_NAME)) {
            return vdso.binary(pid, m);
        }
        return m.fileBacked() ? binaries.binary(pid, m) : Binary.ANONYMOUS;
    }

    // ---------------- kernel ----------------

    @Override
    public void symbolizeKernel(long[] addrs, int count, List<Frame> out) {
        int n = Math.max(0, Math.min(count, addrs.length));
        int base = out.size();
        try {
            KernelSymbols k = kernel.get(false);
            for (int i = 0; i < n; i++) {
                long addr = i == 0 ? addrs[i] : addrs[i] - 1; // return addresses, as in user space
                if (k != null && !k.covers(addr)) {
                    k = kernel.get(true); // a module loaded since we read kallsyms?
                }
                String fn = k != null && k.covers(addr) ? k.table.lookup(addr) : null;
                if (fn == null) {
                    unresolved.incrementAndGet();
                }
                out.add(new Frame(addr, k == null ? null : k.ref, fn, true));
            }
            frames.addAndGet(n);
        } catch (RuntimeException e) {
            bareFrames(e, addrs, n, out, base, true);
        }
    }

    @Override
    public Stats stats() {
        KernelSymbols k = kernel.current();
        return new Stats(processes.size(), binaries.size(), binaries.failures() + vdso.failures(), unresolved.get(),
                processes.mapsReads(), processes.mapsReadFailures(), k == null ? 0 : k.table.size(), frames.get(),
                binaries.weight(), binaries.unreadable(), processes.malformedMapsLines(), processes.pidReuses(),
                debugFiles.used(), perfMapCounters.entries.get(), perfMapCounters.linesSkipped.get(),
                perfMapCounters.bytesOverCap.get());
    }

    @Override
    public void close() {
        processes.clear();
        binaries.clear();
    }
}
