package dev.loupe.unwinder.symbolize;

import dev.loupe.unwinder.proc.MapEntry;
import dev.loupe.unwinder.proc.ProcessRegistry;
import dev.loupe.unwinder.proc.Vdso;
import dev.loupe.unwinder.runtime.FrameType;
import dev.loupe.unwinder.runtime.ProcessRuntimes;
import dev.loupe.unwinder.runtime.RuntimeFrame;
import dev.loupe.unwinder.runtime.RuntimeRegistry;

import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * Symbolizes from /proc, composing one part per job: {@link ProcessTable} (each process's executable
 * mappings and when to re-read them), {@link BinaryCache} (symbol tables of mapped files, by file identity,
 * with {@link DebugSymbolFiles}), {@link VdsoSymbols}, {@link KernelSymbols.Loader} (kallsyms) and the process's
 * runtimes ({@link RuntimeRegistry}: frames the walker tagged, and code in memory no file backs). This class walks
 * the addresses and makes the frames; it names no runtime.
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
    private final ProcessRegistry registry;
    private final DebugSymbolFiles debugFiles;
    private final BinaryCache binaries;
    private final VdsoSymbols vdso;
    private final KernelSymbols.Loader kernel;
    private final RuntimeRegistry runtimes;
    private final LongSupplier nanoTime;
    private final AtomicLong frames = new AtomicLong();
    private final AtomicLong unresolved = new AtomicLong();
    private final AtomicLong fromSampledMappings = new AtomicLong();
    private boolean internalErrorLogged;
    private volatile boolean lines = true; // --lines

    ProcSymbolizer(Options o, ProcessRegistry registry, RuntimeRegistry runtimes) {
        this.nanoTime = o.nanoTime();
        this.runtimes = runtimes;
        this.registry = registry;
        this.processes = new ProcessTable(registry, o.nanoTime());
        registry.addListener(processes); // exits: a process's state goes when it does
        this.debugFiles = new DebugSymbolFiles(o.procRoot(), o.maxCacheBytes());
        this.binaries = new BinaryCache(o.procRoot(), o.maxCacheBytes(), o.nanoTime(), debugFiles);
        this.vdso = new VdsoSymbols(o.procRoot());
        this.kernel = new KernelSymbols.Loader(o.kallsyms(), o.nanoTime());
    }

    // ---------------- user space ----------------

    @Override
    public int symbolizeUser(int pid, long processStartNs, long[] addrs, int count, List<Frame> out) {
        return symbolizeUser(pid, processStartNs, addrs, count, NO_MAPPINGS, out);
    }

    private static final long[] NO_MAPPINGS = {};

    /**
     * A process without a readable cached state (nobody read its /proc yet: most short-lived processes, which may have
     * exited since) has its frames named from the mappings the kernel's walk found, where their files' binaries are cached;
     * its /proc is read only for a frame they cannot name (a file not seen yet, anonymous code, a runtime's tagged
     * frame). A process with a cached state is named from it as before: it may run runtimes that replace native frames.
     */
    @Override
    public int symbolizeUser(int pid, long processStartNs, long[] addrs, int count, long[] sampledMappings, List<Frame> out) {
        int n = Math.max(0, Math.min(count, addrs.length));
        if (n == 0) {
            return 0; // a kernel thread, or a stack that could not be read: nothing to read /proc for
        }
        int base = out.size();
        int hints = 0;
        try {
            long startTicks = processStartNs > 0 ? processStartNs / ProcessRegistry.NANOS_PER_TICK : -1;
            boolean fromSample = sampledMappings.length > 0 && !processes.hasReadable(pid);
            ProcessState proc = fromSample ? null : processes.lookup(pid, startTicks);
            boolean looked = !fromSample;
            ProcessState runtimesOf = null; // the state `runtimes` was looked up for (a re-read makes a new one)
            ProcessRuntimes processRuntimes = ProcessRuntimes.NONE;
            // Per sampled mapping, its binary and pprof mapping as first found: most frames share a few mappings.
            SampledBinary[] sampledBinaries = fromSample ? new SampledBinary[sampledMappings.length / SampledMappings.WORDS] : null;
            ProcessRuntimes sampledRuntimes = null; // the runtimes opened from the sample's mappings, once looked for
            for (int i = 0; i < n; i++) {
                FrameType tagged = FrameType.of(addrs[i]);
                long addr = i == 0 ? addrs[i] : addrs[i] - 1; // return address -> inside the call
                if (tagged != null && fromSample && proc == null) {
                    if (sampledRuntimes == null) {
                        sampledRuntimes = sampledRuntimes(pid, startTicks, sampledMappings, sampledBinaries);
                    }
                    Frame f = sampledTagged(sampledRuntimes, tagged, addrs[i]);
                    if (f != null) {
                        out.add(f);
                        continue;
                    }
                }
                if (tagged == null && fromSample) {
                    Frame f = sampledFrame(pid, sampledMappings, sampledBinaries, addr);
                    if (f != null) {
                        fromSampledMappings.incrementAndGet();
                        if (f.function() == null) {
                            unresolved.incrementAndGet();
                        }
                        out.add(f);
                        continue;
                    }
                }
                if (!looked) {
                    proc = processes.lookup(pid, startTicks);
                    looked = true;
                }
                if (tagged != null) {
                    out.add(tagged(pid, proc, tagged, addrs[i]));
                    continue;
                }
                int m = proc == null ? -1 : proc.find(addr);
                if (m < 0 && proc != null) {
                    proc = processes.rereadOnMiss(pid, proc, startTicks);
                    m = proc.find(addr);
                }
                Frame f = m < 0 ? newCode(pid, proc, sampledMappings, addr, i > 0) : resolve(pid, proc, m, addr, i > 0);
                if (i == n - 1 && m >= 0 && proc.mapping(m).anonymousCode()
                        && (f.function() != null || !proc.mapping(m).path().equals(f.mapping().path()))) {
                    hints |= ENDS_IN_RUNTIME_CODE; // named by a runtime, or in a mapping one named (code newer than its read)
                }
                if (f.function() == null) {
                    unresolved.incrementAndGet();
                    if (f.mapping() == null || isAnonymous(f.mapping().path())) {
                        hints |= UNNAMED_CODE;
                    }
                    out.add(f);
                    continue;
                }
                if (proc != runtimesOf) {
                    runtimesOf = proc;
                    processRuntimes = proc == null ? ProcessRuntimes.NONE : proc.runtimes(runtimes, pid);
                }
                if (!processRuntimes.isEmpty() && processRuntimes.replacesNative(f.function())) {
                    continue; // a runtime's own frames stand for it
                }
                out.add(f);
            }
            frames.addAndGet(n);
        } catch (RuntimeException e) {
            // A bug, not bad input (that is handled above): keep every frame as an address, say so once.
            bareFrames(e, addrs, n, out, base, false);
            return 0;
        }
        return hints;
    }

    /**
     * The frame at {@code addr} named from the sample's mappings, if it lies in a file whose binary is cached (found by
     * device and inode, no I/O) and the binary names it; null otherwise ({@code /proc} is read for it then).
     */
    private Frame sampledFrame(int pid, long[] mappings, SampledBinary[] memo, long addr) {
        int w = SampledMappings.find(mappings, addr);
        if (w < 0) {
            return null;
        }
        SampledBinary sb = memo[w / SampledMappings.WORDS];
        if (sb == null) {
            sb = sampledBinary(pid, mappings, w);
            memo[w / SampledMappings.WORDS] = sb;
        }
        if (sb == SampledBinary.NONE) {
            return null;
        }
        long vaddr = sb.binary().elf().fileOffsetToVaddr(addr - mappings[w + SampledMappings.START] + mappings[w + SampledMappings.OFFSET]);
        if (vaddr == -1) {
            return null; // not where the cached binary has code: /proc may know better
        }
        return withLines(new Frame(addr, sb.ref(), sb.binary().symbols().lookup(vaddr), false), sb.binary(), vaddr);
    }

    /**
     * The runtimes of a process not read from /proc that open from a sample's mappings (an interpreter whose binary
     * the kernel's table came from): the sample's file mappings whose binaries are cached, by the path they were
     * cached under.
     */
    private ProcessRuntimes sampledRuntimes(int pid, long startTicks, long[] mappings, SampledBinary[] memo) {
        List<MapEntry> files = new java.util.ArrayList<>(mappings.length / SampledMappings.WORDS);
        for (int w = 0; w + SampledMappings.WORDS <= mappings.length; w += SampledMappings.WORDS) {
            if (mappings[w + SampledMappings.KIND] != SampledMappings.FILE) {
                continue;
            }
            SampledBinary sb = memo[w / SampledMappings.WORDS];
            if (sb == null) {
                sb = sampledBinary(pid, mappings, w);
                memo[w / SampledMappings.WORDS] = sb;
            }
            if (sb == SampledBinary.NONE) {
                continue;
            }
            long device = mappings[w + SampledMappings.DEVICE];
            files.add(new MapEntry(mappings[w + SampledMappings.START], mappings[w + SampledMappings.END], "r-xp",
                    mappings[w + SampledMappings.OFFSET], SampledMappings.major(device), SampledMappings.minor(device),
                    mappings[w + SampledMappings.INODE], sb.ref().path(), false));
        }
        return files.isEmpty() ? ProcessRuntimes.NONE : runtimes.ofSampled(pid, startTicks, files);
    }

    /** A tagged frame named by runtimes opened from the sample's mappings; null if they cannot (/proc is read then). */
    private Frame sampledTagged(ProcessRuntimes rs, FrameType type, long frame) {
        RuntimeFrame rf = rs.isEmpty() ? null : rs.taggedFrame(type, type.value(frame));
        if (rf == null) {
            return null;
        }
        fromSampledMappings.incrementAndGet();
        MappingRef m = sharedTaggedMapping(type, rf.mapping());
        if (rf.function() == null) {
            unresolved.incrementAndGet();
            return new Frame(frame, m, "[" + type.description() + "]", false);
        }
        return frame(frame, m, rf);
    }

    /**
     * The mapping of tagged frames of {@code type} named {@code name} for processes named from their samples: one per
     * name for all of them (a process read from /proc has its own, {@link ProcessState#taggedMapping}), a few at most.
     */
    private MappingRef sharedTaggedMapping(FrameType type, String name) {
        String key = type.name() + '\0' + name;
        MappingRef m = sharedTaggedMappings.get(key);
        if (m == null) {
            if (sharedTaggedMappings.size() >= 256) {
                sharedTaggedMappings.clear(); // bounded; names are few (one per interpreter binary)
            }
            m = new MappingRef(type.rangeStart(), type.rangeEnd(), 0, name, null, true);
            sharedTaggedMappings.put(key, m);
        }
        return m;
    }

    private final java.util.Map<String, MappingRef> sharedTaggedMappings = new java.util.HashMap<>();

    /** A sampled mapping's cached binary and its pprof mapping; {@link #NONE} when there is none to name it by. */
    private record SampledBinary(Binary.Loaded binary, MappingRef ref) {
        static final SampledBinary NONE = new SampledBinary(null, null);
    }

    private SampledBinary sampledBinary(int pid, long[] mappings, int w) {
        long start = mappings[w + SampledMappings.START];
        long offset = mappings[w + SampledMappings.OFFSET];
        BinaryCache.Known known;
        if (mappings[w + SampledMappings.KIND] == SampledMappings.VDSO) {
            // The same image in every process of this kernel: read once from our own memory (by its size).
            MapEntry m = new MapEntry(start, mappings[w + SampledMappings.END], "r-xp", 0, 0, 0, 0, Vdso.MAPPING_NAME, false);
            known = new BinaryCache.Known(vdso.binary(pid, m), Vdso.MAPPING_NAME);
        } else if (mappings[w + SampledMappings.KIND] == SampledMappings.FILE) {
            long device = mappings[w + SampledMappings.DEVICE];
            known = binaries.known(dev.loupe.unwinder.proc.FileKey.device(SampledMappings.major(device),
                    SampledMappings.minor(device)), mappings[w + SampledMappings.INODE]);
        } else {
            return SampledBinary.NONE; // anonymous code: its runtime names it, through /proc
        }
        if (known == null || !(known.binary() instanceof Binary.Loaded l)) {
            return SampledBinary.NONE;
        }
        return new SampledBinary(l, new MappingRef(start, mappings[w + SampledMappings.END], offset, known.path(), l.buildId(),
                known.binary().hasFunctions()));
    }

    /**
     * An address in none of the process's mappings as last read (re-read at most every 2 s): if the walk found it in
     * anonymous code (a JIT's code heap that grew since), the process's runtimes may name it; else no mapping.
     */
    private Frame newCode(int pid, ProcessState proc, long[] mappings, long addr, boolean callSite) {
        int w = proc == null ? -1 : SampledMappings.find(mappings, addr);
        if (w < 0 || mappings[w + SampledMappings.KIND] != SampledMappings.ANONYMOUS) {
            return new Frame(addr, null, null, false);
        }
        RuntimeFrame rf = proc.runtimes(runtimes, pid).code(addr, callSite, nanoTime.getAsLong());
        if (rf == null) {
            return new Frame(addr, null, null, false);
        }
        fromSampledMappings.incrementAndGet(); // named from the mapping the walk found, not /proc
        return frame(addr, new MappingRef(mappings[w + SampledMappings.START], mappings[w + SampledMappings.END], 0, rf.mapping(),
                null, true), rf);
    }

    /** No file and no kernel pseudo-file ([vdso], [stack]) behind it: plain or named ([anon:...]) anonymous memory. */
    private static boolean isAnonymous(String path) {
        return path == null || path.isEmpty() || path.startsWith("[anon");
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
        if (bin instanceof Binary.Loaded l) {
            long vaddr = l.elf().fileOffsetToVaddr(addr - m.start() + m.offset());
            String fn = vaddr == -1 ? null : l.symbols().lookup(vaddr);
            return withLines(new Frame(addr, proc.ref(idx), fn, false), l, vaddr);
        }
        if (bin == Binary.ANONYMOUS && m.anonymousCode()) {
            RuntimeFrame rf = proc.runtimes(runtimes, pid).code(addr, callSite, nanoTime.getAsLong());
            if (rf != null) {
                if (!rf.mapping().equals(proc.ref(idx).path())) {
                    // The mapping takes the name the runtime gives its code, rather than staying without one.
                    proc.resolved(idx, Binary.ANONYMOUS, new MappingRef(m.start(), m.end(), m.offset(), rf.mapping(), null, true));
                }
                return frame(addr, proc.ref(idx), rf);
            }
        }
        return new Frame(addr, proc.ref(idx), null, false);
    }

    /**
     * A frame the walker reported as a runtime's own value (an interpreter frame's {@code Method*}): named by the
     * process's runtime, in the mapping it names for that kind of frame (so a profile tells such frames apart);
     * "[TYPE]" if no runtime of the process can name it.
     */
    private Frame tagged(int pid, ProcessState proc, FrameType type, long frame) {
        RuntimeFrame rf = proc == null ? null : proc.runtimes(runtimes, pid).taggedFrame(type, type.value(frame));
        if (rf == null || rf.function() == null) {
            unresolved.incrementAndGet();
            MappingRef m = rf == null ? null : proc.taggedMapping(type, rf.mapping());
            return new Frame(frame, m, "[" + type.description() + "]", false);
        }
        return frame(frame, proc.taggedMapping(type, rf.mapping()), rf);
    }

    /** A runtime's frame; with the lines of each of its inlined functions where the runtime gives them and lines are on. */
    private Frame frame(long address, MappingRef mapping, RuntimeFrame rf) {
        if (lines && !rf.sourceLines().isEmpty()) {
            return new Frame(address, mapping, rf.function(), false, rf.inlined(), null, 0, rf.sourceLines());
        }
        if (rf.startLine() > 0 && rf.inlined().isEmpty()) { // its function's first line goes as pprof's start_line
            return new Frame(address, mapping, rf.function(), false, List.of(), rf.file(), rf.line(),
                    List.of(new dev.loupe.unwinder.lines.SourceLine(rf.function(), rf.file(), rf.line(), rf.startLine())));
        }
        return new Frame(address, mapping, rf.function(), false, rf.inlined(), rf.file(), rf.line());
    }

    /** {@code f} with the binary's source lines at {@code vaddr} (issue 28), if lines are on and it has them. */
    private Frame withLines(Frame f, Binary.Loaded bin, long vaddr) {
        if (!lines || f.function() == null || vaddr == -1) {
            return f;
        }
        java.util.List<dev.loupe.unwinder.lines.SourceLine> found = bin.lines().lines(vaddr);
        return found.isEmpty() ? f : new Frame(f.address(), f.mapping(), f.function(), false, List.of(), null, 0, found);
    }

    @Override
    public void lines(boolean on) {
        lines = on;
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
                debugFiles.used(), fromSampledMappings.get(),
                binaries.resolvedInOwnRoot());
    }

    @Override
    public void close() {
        registry.removeListener(processes);
        processes.clear();
        binaries.clear();
    }
}
