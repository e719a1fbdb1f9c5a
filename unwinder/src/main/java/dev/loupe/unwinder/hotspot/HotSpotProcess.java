package dev.loupe.unwinder.hotspot;

import dev.loupe.unwinder.proc.ProcessGoneException;
import dev.loupe.unwinder.runtime.CodeTable;
import dev.loupe.unwinder.runtime.FrameType;
import dev.loupe.unwinder.runtime.RescanSchedule;
import dev.loupe.unwinder.runtime.RuntimeFrame;
import dev.loupe.unwinder.runtime.RuntimeProcess;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongSupplier;

/**
 * One JVM, read from outside through its one {@link HotSpotJvm} by both consumers: names (an interpreter frame's
 * {@code Method*}; JIT code by the code blob that holds the address, with the methods C1/C2 inlined at the pc) and the
 * walker's table for its code cache ({@link CodeCacheUnwindTable}). One read of the code cache serves both, on one
 * {@link RescanSchedule}: after a change, when samples or lookups show code the last read lacked, and on a back-off
 * otherwise. Code compiled since the last read has no rows and no name until the next.
 *
 * <p>Thread-safe: the sampling thread names, the unwind table thread asks for tables; both under this object's lock
 * (a read of a big code cache holds it for tens of milliseconds).
 */
final class HotSpotProcess implements RuntimeProcess {
    private static final System.Logger LOG = System.getLogger(HotSpotProcess.class.getName());
    /** Decoded inlining chains kept per pc (emptied when a read finds the code cache changed). */
    static final int MAX_CACHED_SCOPES = 16_384;

    private final HotSpotRuntime runtime;
    private final int pid;
    private final HotSpotJvm jvm;
    private final LongSupplier nanoTime;
    private final String jitMapping;
    private final String interpretedMapping;

    private final RescanSchedule schedule = new RescanSchedule();
    private Blobs blobs = Blobs.EMPTY;
    private long callStubReturn; // StubRoutines::_call_stub_return_address, once read (0 until then)
    private final RuntimeFrame callStub;
    private Stubs stubs; // null: read when next needed
    private List<HotSpotJvm.Codelet> codelets = List.of(); // the interpreter's, once read
    private List<HotSpotJvm.Stub> framed; // null: read at the next table build
    private boolean read; // a read of the blobs succeeded once
    private long fingerprint;
    private long lastFullRead;
    private long signature;
    private boolean tablesWanted;
    private boolean tableTried; // a read was made for a table: later ones keep to the schedule
    private boolean problemLogged; // the one line about a code cache that cannot be read or tabled
    private CodeTable table;
    private int generation;
    private int handedOut = -1;
    /**
     * Blobs made since the last read, each found by one lookup through its heap's segment map when a sample showed its
     * code (the kernel walked it the same way), by start; emptied by a read that finds the code cache changed.
     */
    private final java.util.TreeMap<Long, CodeBlob> fresh = new java.util.TreeMap<>();
    /** PCs whose lookup found no blob since that read (a free block, a torn read): not looked up again until the next. */
    private final java.util.Set<Long> freshMisses = new java.util.HashSet<>();
    static final int MAX_FRESH = 4096;
    private final Map<Long, Scopes> scopes = new LinkedHashMap<>(256, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Long, Scopes> e) {
            return size() > MAX_CACHED_SCOPES;
        }
    };

    HotSpotProcess(HotSpotRuntime runtime, int pid, HotSpotJvm jvm, String exe, LongSupplier nanoTime) {
        this.runtime = runtime;
        this.pid = pid;
        this.jvm = jvm;
        this.nanoTime = nanoTime;
        this.jitMapping = "[jit] " + exe;
        this.interpretedMapping = "[interpreted] " + exe;
        this.callStub = RuntimeFrame.of("[call_stub]", jitMapping);
    }

    /**
     * An interpreter frame's {@code Method*} and bci ({@link InterpreterFrameStep#value}): "pkg.Class.method", in
     * {@code [interpreted] EXE}, with its class's source file and the bci's line where the walk knew the bci.
     */
    @Override
    public synchronized RuntimeFrame taggedFrame(FrameType type, long value) {
        long method = InterpreterFrameStep.methodOf(value);
        String name = type == FrameType.HOTSPOT_METHOD ? method(method) : null;
        int bci = InterpreterFrameStep.bciOf(value);
        return new RuntimeFrame(name, null, 0, List.of(), interpretedMapping, name == null ? List.of()
                : JavaSourceLines.of(jvm, List.of(name), new long[] {method}, new int[] {bci < 0 ? Integer.MIN_VALUE : bci}));
    }

    /**
     * Compiled code: the methods C1/C2 inlined at the pc (innermost first), then the compiled method; a stub by its own
     * name in brackets; null if no blob of the last read holds the address (then a read is hinted, and made if due).
     */
    @Override
    public synchronized RuntimeFrame code(long addr, boolean callSite, long now) {
        int b = blobs.find(addr);
        if (b < 0) {
            schedule.hint(now);
            if (schedule.due(now)) {
                read(now, false);
                b = blobs.find(addr);
            }
        }
        if (b < 0) {
            return freshFrame(addr, callSite);
        }
        Blobs bs = blobs;
        if (bs.methods[b] == 0) {
            // The call stub is one of several stubs in a StubRoutines blob: named by its return point, as async-profiler does.
            if (callSite && callStubReturn != 0 && addr + 1 == callStubReturn) {
                return callStub;
            }
            RuntimeFrame stub = stub(addr);
            return stub != null ? stub : bs.stubFrames[b];
        }
        long pc = callSite ? addr + 1 : addr; // a call site's own debug record is at its return address
        Scopes cached = scopes.get(pc);
        if (cached != null && cached.blob == bs.blobs[b]) {
            return cached.frame; // the sampling thread's common case: no allocation
        }
        RuntimeFrame frame = inlining(bs, b, pc);
        if (frame == null) {
            return null;
        }
        scopes.put(pc, new Scopes(bs.blobs[b], frame));
        return frame;
    }

    /**
     * Code no read has seen: the blob holding it, looked up at once through its heap's segment map (the same blob the
     * kernel's walk found), named as a read's blobs are; null if none holds it.
     */
    private RuntimeFrame freshFrame(long addr, boolean callSite) {
        Map.Entry<Long, CodeBlob> e = fresh.floorEntry(addr);
        CodeBlob cb = e != null && addr < e.getValue().end() ? e.getValue() : null;
        if (cb == null) {
            if (freshMisses.contains(addr) || fresh.size() + freshMisses.size() >= MAX_FRESH) {
                return null;
            }
            try {
                cb = jvm.blobAt(addr).orElse(null);
            } catch (IOException | HotSpotException | RuntimeException ex) {
                cb = null; // gone, or memory that does not hold a blob together: no name rather than a wrong one
            }
            if (cb == null) {
                freshMisses.add(addr);
                return null;
            }
            runtime.freshBlobs.incrementAndGet();
            fresh.put(cb.start(), cb);
        }
        if (cb.method() == 0) {
            RuntimeFrame stub = stub(addr);
            return stub != null ? stub : cb.name().isEmpty() ? null : RuntimeFrame.of("[" + cb.name() + "]", jitMapping);
        }
        long pc = callSite ? addr + 1 : addr;
        return inlining(cb.address(), cb.start(), cb.end(), cb.method(), pc);
    }

    /**
     * The compiled method at blob {@code b}, after the methods inlined at {@code pc}, each at the line of its scope's
     * bci where known ({@link JavaSourceLines}); null if it has no name.
     */
    private RuntimeFrame inlining(Blobs bs, int b, long pc) {
        return inlining(bs.blobs[b], bs.starts[b], bs.ends[b], bs.methods[b], pc);
    }

    private RuntimeFrame inlining(long blob, long start, long end, long method, long pc) {
        String own = method(method);
        if (own == null) {
            return null;
        }
        NmethodScopes.Chain chain = null;
        try {
            chain = jvm.scopes(new CodeBlob(CodeBlob.Kind.NMETHOD, blob, start, end, -1, -1, "", method), pc);
        } catch (IOException | RuntimeException e) {
            // gone, or debug information that does not hold together: the compiled method alone
        }
        List<String> names = List.of(own);
        if (chain != null && chain.methods().length > 1) {
            String[] n = new String[chain.methods().length];
            for (int i = 0; i < n.length - 1; i++) {
                n[i] = method(chain.methods()[i]);
                if (n[i] == null) {
                    chain = null; // an inlined method without a name: the compiled method alone, not a guess
                    break;
                }
            }
            if (chain != null) {
                n[n.length - 1] = own;
                names = List.of(n);
            }
        }
        return new RuntimeFrame(names.getLast(), null, 0, names.subList(0, names.size() - 1), jitMapping,
                chain == null ? List.of() : JavaSourceLines.of(jvm, names, chain.methods(), chain.bcis()));
    }

    /** How an interpreter codelet's name begins: "[Interpreter: invokevirtual]". */
    static final String INTERPRETER_CODELET = "Interpreter: ";

    /**
     * The generated stub ({@link HotSpotJvm#stubs}) holding {@code addr}, "[group::name]" (most in the StubRoutines
     * blobs, "[StubRoutines::jlong_disjoint_arraycopy]"; method handle adapters in theirs), or the interpreter's codelet
     * ({@link HotSpotJvm#codelets}), "[Interpreter: description]" ("[Interpreter: invokevirtual]", "[Interpreter: method
     * entry point (kind = zerolocals)]"): the interpreter's code where the walk found no interpreted frame to name by
     * its method; null if none does (the blob's own name then). The list is read when first needed after a read that found the
     * code cache changed (stubs are made at startup, and JDK 21+ makes some later).
     */
    private RuntimeFrame stub(long addr) {
        if (stubs == null) {
            try {
                List<HotSpotJvm.Stub> list = new ArrayList<>(jvm.stubs());
                if (codelets.isEmpty()) {
                    codelets = jvm.codelets(); // made at startup, never changed: read until found once
                }
                for (HotSpotJvm.Codelet c : codelets) { // in the interpreter's blob, apart from every stub's
                    list.add(new HotSpotJvm.Stub(INTERPRETER_CODELET + c.description(), c.begin(), c.end()));
                }
                list.sort(java.util.Comparator.comparingLong(HotSpotJvm.Stub::begin));
                stubs = new Stubs(list.stream().mapToLong(HotSpotJvm.Stub::begin).toArray(),
                        list.stream().mapToLong(HotSpotJvm.Stub::end).toArray(),
                        list.stream().map(st -> RuntimeFrame.of("[" + st.name() + "]", jitMapping)).toArray(RuntimeFrame[]::new));
            } catch (IOException | RuntimeException e) {
                stubs = Stubs.EMPTY; // gone, or a list that does not read: the blobs' names, until the next change
            }
        }
        int i = Arrays.binarySearch(stubs.begins, addr);
        if (i < 0) {
            i = -i - 2;
        }
        return i >= 0 && addr < stubs.ends[i] ? stubs.frames[i] : null;
    }

    /**
     * The generated stubs that begin with {@code enter()}, read again with the stub list (after a change of the code
     * cache); none when the list cannot be read.
     */
    private List<HotSpotJvm.Stub> framedStubs() {
        if (framed == null) {
            try {
                framed = jvm.framedStubs(jvm.stubs());
            } catch (IOException | RuntimeException e) {
                return List.of(); // gone, or a list that does not read: asked again at the next build
            }
        }
        return framed;
    }

    /** HotSpot's generated stubs, sorted by begin. */
    private record Stubs(long[] begins, long[] ends, RuntimeFrame[] frames) {
        static final Stubs EMPTY = new Stubs(new long[0], new long[0], new RuntimeFrame[0]);
    }

    private String method(long method) {
        try {
            return jvm.methodName(method).orElse(null);
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    @Override
    public synchronized CodeTable codeTable(long now) {
        tablesWanted = true;
        if (table == null && (!tableTried || schedule.due(now))) {
            read(now, true); // the first table at once; after a read that could not make one, when the schedule says
        }
        if (table != null) {
            handedOut = table.generation();
        }
        return table;
    }

    @Override
    public synchronized boolean refreshCode(long now) {
        if (schedule.due(now)) {
            read(now, false);
        }
        return table != null && table.generation() != handedOut;
    }

    @Override
    public synchronized void unknownCode(long now) {
        schedule.hint(now);
    }

    /**
     * Reads the code cache: its segment maps first (a 128th of the heap: unchanged, the blobs almost surely are too,
     * though a full read still runs at least every {@link RescanSchedule#MAX_RESCAN_NANOS} for what they cannot show,
     * a block reused at its size), then the blobs; a new set of blobs replaces the names' and, once tables are wanted,
     * the table. {@code full}: skip the segment-map shortcut.
     */
    private void read(long now, boolean full) {
        long start = nanoTime.getAsLong();
        boolean changed = false;
        tableTried |= tablesWanted;
        try {
            long f = jvm.codeCacheFingerprint();
            if (full || !read || f != fingerprint || start - lastFullRead >= RescanSchedule.MAX_RESCAN_NANOS || table == null && tablesWanted) {
                fingerprint = f;
                lastFullRead = start;
                runtime.scans.incrementAndGet();
                CodeCache cache = jvm.codeCache();
                if (callStubReturn == 0) {
                    callStubReturn = jvm.callStubReturnAddress();
                }
                long sig = signature(cache);
                changed = !read || sig != signature;
                if (changed) {
                    signature = sig;
                    blobs = Blobs.of(cache, jitMapping);
                    stubs = null;
                    framed = null;
                    scopes.clear();
                    fresh.clear();
                    freshMisses.clear();
                    read = true;
                }
                if (tablesWanted && (changed || table == null)) {
                    build(cache);
                }
            }
        } catch (ProcessGoneException e) {
            runtime.scanFailures.incrementAndGet(); // exiting: the registry forgets it
        } catch (IOException | HotSpotException | RuntimeException e) {
            // Unmapped memory while the process lives, or a layout that does not hold together: said once (a process
            // whose tables lie would say it at every rescan); the schedule bounds how often it is read again.
            runtime.scanFailures.incrementAndGet();
            problem("cannot read the code cache of pid " + pid + ": " + e.getMessage());
        }
        schedule.read(start, nanoTime.getAsLong(), changed);
    }

    private void build(CodeCache cache) {
        try {
            String name = "[jit] pid " + pid;
            CodeCacheUnwindTable.Built built = CodeCacheUnwindTable.build(name, cache, framedStubs());
            if (table == null) {
                LOG.log(System.Logger.Level.INFO, "jit tables: pid " + pid + " (" + jvm.vmVersion() + "): "
                        + built.compiledBlobs() + " compiled blobs, " + built.interpreterBlobs() + " interpreter, "
                        + built.undescribedBlobs() + " without a frame size, " + built.framedStubs() + " stubs framed by RBP; "
                        + built.table().rowCount() + " rows");
            }
            table = new CodeTable(built.table(), cache.heaps().stream().map(h -> new CodeTable.Range(h.low(), h.high())).toList(),
                    ++generation);
            runtime.tablesBuilt.incrementAndGet();
        } catch (Exception e) {
            runtime.scanFailures.incrementAndGet();
            problem("no table for the code cache of pid " + pid + ": " + e.getMessage());
        }
    }

    /** The first problem with this process's code cache, as one line; the later ones only count (scan_failures). */
    private void problem(String what) {
        if (!problemLogged) {
            problemLogged = true;
            LOG.log(System.Logger.Level.WARNING, "jit tables: " + what + " (said once for the process; its JIT frames keep"
                    + " frame pointers until a read succeeds)");
        } else {
            LOG.log(System.Logger.Level.DEBUG, "jit tables: " + what);
        }
    }

    private static long signature(CodeCache cache) {
        long h = 1125899906842597L;
        for (CodeBlob b : cache.blobs()) {
            h = 31 * h + b.start();
            h = 31 * h + b.end();
            h = 31 * h + b.frameSizeBytes();
            h = 31 * h + b.kind().ordinal();
        }
        return h;
    }

    @Override
    public void close() {
        try {
            jvm.close();
        } catch (Exception e) {
            // a file descriptor only
        }
    }

    /** The frame decoded at a pc, for the blob it was decoded in. */
    private record Scopes(long blob, RuntimeFrame frame) {}

    /**
     * The last read's blobs in primitive arrays sorted by start (40 bytes a blob: a big JVM has tens of thousands); a
     * blob's frame is kept only where it has no {@code Method*} (stubs, a few hundred: "[name]", null if unnamed).
     */
    private record Blobs(long[] starts, long[] ends, long[] methods, long[] blobs, RuntimeFrame[] stubFrames) {
        static final Blobs EMPTY = new Blobs(new long[0], new long[0], new long[0], new long[0], new RuntimeFrame[0]);

        static Blobs of(CodeCache cache, String mapping) {
            CodeBlob[] sorted = cache.blobs().toArray(new CodeBlob[0]);
            Arrays.sort(sorted, Comparator.comparingLong(CodeBlob::start));
            int n = sorted.length;
            Blobs b = new Blobs(new long[n], new long[n], new long[n], new long[n], new RuntimeFrame[n]);
            for (int i = 0; i < n; i++) {
                b.starts[i] = sorted[i].start();
                b.ends[i] = sorted[i].end();
                b.methods[i] = sorted[i].method();
                b.blobs[i] = sorted[i].address();
                String name = sorted[i].name();
                b.stubFrames[i] = b.methods[i] == 0 && name != null && !name.isEmpty() ? RuntimeFrame.of("[" + name + "]", mapping) : null;
            }
            return b;
        }

        int find(long pc) {
            int i = Arrays.binarySearch(starts, pc);
            if (i < 0) {
                i = -i - 2;
            }
            return i >= 0 && pc < ends[i] ? i : -1;
        }
    }
}
