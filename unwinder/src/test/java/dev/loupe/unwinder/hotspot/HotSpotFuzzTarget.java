package dev.loupe.unwinder.hotspot;

import dev.loupe.unwinder.ehframe.EhFrameException;
import dev.loupe.unwinder.ehframe.UnwindTable;
import dev.loupe.unwinder.proc.ProcessGoneException;
import dev.loupe.unwinder.runtime.CodeTable;
import dev.loupe.unwinder.runtime.FrameType;
import dev.loupe.unwinder.runtime.RuntimeFrame;
import dev.loupe.unwinder.runtime.RuntimeProcess;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * The fuzz target (Jazzer's {@code fuzzerTestOneInput}) for the HotSpot readers over a process whose every byte the
 * input gives ({@link SyntheticJvm}: regions of an address space, nothing mapped elsewhere, optionally a process that
 * exits after some reads). It drives them as the agent does:
 * <ol>
 * <li>{@link HotSpotJvm#read}: the VMStructs tables (name pointers, strides, offsets) and the {@link Layout};</li>
 * <li>the code cache's fingerprint and walk (heaps, segment maps, block headers, blob headers and names);</li>
 * <li>each nmethod's {@code Method*} named (Method, ConstMethod, ConstantPool, Symbol, Klass) and the methods inlined
 * at several of its pcs (PcDescs, scope records, metadata); {@code Method*}s taken from the input's own words;</li>
 * <li>the code cache's unwind table;</li>
 * <li>the same process behind the runtime seam ({@link HotSpotRuntime}, {@link HotSpotProcess}) for 100 simulated
 * seconds of samples, table requests and rescans, with a clock that charges each read.</li>
 * </ol>
 * Bad input may end an operation with only what the readers promise: {@link HotSpotException}, or an IOException
 * where the method says so (after the process has exited: {@link ProcessGoneException}). Findings are anything else
 * escaping, and (as {@link AssertionError}s) work beyond a bound proportional to the mapped bytes (counted by the
 * fake memory, which fails the read that exceeds it), a single read larger than the largest section a reader admits,
 * an exit swallowed (an operation that read after the process was gone and did not say so), results that are not
 * consistent with the memory (names that are not strings of the process, blobs outside their heap or overlapping,
 * heaps overlapping, an unsorted or unverifiable table, an inlining chain not ending in its nmethod's method), and
 * the seam reading more often than its schedule allows or logging about the process more than once.
 */
public final class HotSpotFuzzTarget {
    static final int PID = 4242;
    /** Reads an operation may make: per mapped byte, plus a constant. */
    static final long READS_PER_BYTE = 4;
    static final long READS_BASE = 512;
    /** Bytes an operation may ask for: per mapped byte, plus a constant (a failed read counts what it asked). */
    static final long BYTES_PER_BYTE = 256;
    static final long BYTES_BASE = 64L << 20;
    /** The largest single read a reader may make: an nmethod's largest section. */
    static final long MAX_READ = NmethodScopes.MAX_SECTION_BYTES;
    /** Seam: simulated steps of one second, and what each read costs on the simulated clock. */
    static final int SECONDS = 100;
    static final long READ_NANOS = TimeUnit.MICROSECONDS.toNanos(20);
    private static final int MAX_BLOBS_DRIVEN = 64;
    /** HotSpot's own limit on a code cache (ReservedCodeCacheSize at most 2 GiB on x86-64): all heaps together. */
    static final long CODE_CACHE_LIMIT = 2L << 30;

    private static final Logger LOGS = Logger.getLogger("dev.loupe.unwinder");
    private static final List<LogRecord> RECORDS = new ArrayList<>();

    static {
        LOGS.setUseParentHandlers(false);
        LOGS.setLevel(Level.INFO);
        LOGS.addHandler(new Handler() {
            @Override
            public void publish(LogRecord r) {
                synchronized (RECORDS) {
                    RECORDS.add(r);
                }
            }

            @Override
            public void flush() {}

            @Override
            public void close() {}
        });
    }

    private HotSpotFuzzTarget() {}

    public static void fuzzerTestOneInput(byte[] input) {
        run(input);
    }

    /** Runs inputs (files) and says what each came to: for looking at a finding. */
    public static void main(String[] args) throws IOException {
        for (String a : args) {
            try {
                Report r = run(java.nio.file.Files.readAllBytes(java.nio.file.Path.of(a)));
                System.out.println(a + ": " + (r.failure() == null ? r.blobs().size() + " blobs, names " + r.names().values()
                        + ", table rows " + r.tableRows() : r.failure()) + "; logs " + r.logs() + "; reads " + r.reads());
            } catch (Throwable e) {
                System.out.println(a + ": " + e);
                e.printStackTrace(System.out);
            }
        }
    }

    /** What one input came to: for tests that a seed is read in full, and for the regression corpus's replay. */
    record Report(String failure, List<CodeCache.Range> heaps, List<CodeBlob> blobs, Map<Long, String> names,
                  Map<Long, List<String>> inlinedAt40, int tableRows, List<RuntimeFrame> seamFrames, List<String> logs,
                  long reads) {}

    static Report run(byte[] input) {
        synchronized (RECORDS) {
            RECORDS.clear();
        }
        FakeProcessMemory mem = SyntheticJvm.decode(input);
        mem.cap(READS_BASE + READS_PER_BYTE * mem.mappedBytes(), BYTES_BASE + BYTES_PER_BYTE * mem.mappedBytes());
        Checks c = new Checks(mem);
        Report r = c.direct();
        List<RuntimeFrame> seam;
        try {
            seam = seam(input);
        } catch (AssertionError | RuntimeException e) {
            throw new AssertionError("behind the seam (read directly: " + (r.failure == null ? "in full" : r.failure) + "): "
                    + e.getMessage(), e);
        }
        List<String> logs;
        synchronized (RECORDS) {
            logs = RECORDS.stream().map(x -> x.getLevel() + " " + x.getMessage()).toList();
        }
        if (mem.largestRead() > MAX_READ) {
            throw new AssertionError("a read of " + mem.largestRead() + " bytes, more than any section a reader admits");
        }
        return new Report(r.failure, r.heaps, r.blobs, r.names, r.inlinedAt40, r.tableRows, seam, logs, mem.reads());
    }

    /** The readers called directly, every result checked. */
    private static final class Checks {
        final FakeProcessMemory mem;
        final Set<String> checkedNames = new HashSet<>();

        Checks(FakeProcessMemory mem) {
            this.mem = mem;
        }

        Report direct() {
            HotSpotJvm jvm;
            long gone = mem.readsWhileGone();
            mem.mark();
            try {
                jvm = HotSpotJvm.read(PID, mem, "/fake/libjvm.so", SyntheticJvm::symbol);
            } catch (HotSpotException e) {
                notSwallowed(gone, "HotSpotJvm.read", e);
                return failed("read: " + e.getMessage());
            } catch (ProcessGoneException e) {
                return failed("gone: " + e.getMessage());
            } catch (IOException e) {
                throw new AssertionError("HotSpotJvm.read: an IOException while the process lives (its tables point at"
                        + " unmapped memory: that is a HotSpotException, the runtime unusable)", e);
            }
            notSwallowed(gone, "HotSpotJvm.read", null);

            Long fingerprint = null;
            gone = mem.readsWhileGone();
            mem.mark();
            try {
                fingerprint = jvm.codeCacheFingerprint();
                notSwallowed(gone, "codeCacheFingerprint", null);
            } catch (HotSpotException e) {
                notSwallowed(gone, "codeCacheFingerprint", e);
            } catch (IOException e) {
                // unmapped (documented), or gone
            }
            CodeCache cc;
            gone = mem.readsWhileGone();
            mem.mark();
            try {
                cc = jvm.codeCache();
                notSwallowed(gone, "codeCache", null);
            } catch (HotSpotException e) {
                notSwallowed(gone, "codeCache", e);
                return failed("code cache: " + e.getMessage());
            } catch (IOException e) {
                return failed("code cache unreadable: " + e.getMessage());
            }
            checkCodeCache(cc);
            if (fingerprint != null && !mem.gone()) {
                mem.mark();
                try {
                    long again = jvm.codeCacheFingerprint();
                    if (again != fingerprint) {
                        throw new AssertionError("the fingerprint of unchanged memory changed");
                    }
                } catch (HotSpotException | IOException e) {
                    if (!mem.gone()) {
                        throw new AssertionError("a fingerprint read once fails the second time", e);
                    }
                }
            }

            Map<Long, String> names = new LinkedHashMap<>();
            Map<Long, List<String>> inlined = new LinkedHashMap<>();
            int driven = 0;
            for (CodeBlob b : cc.blobs()) {
                if (b.kind() != CodeBlob.Kind.NMETHOD || driven++ == MAX_BLOBS_DRIVEN) {
                    continue;
                }
                String own = name(jvm, b.method());
                if (own != null) {
                    names.put(b.method(), own);
                }
                for (long off : new long[] {0, 16, 40, 80, b.end() - b.start() - 1, b.end() - b.start()}) {
                    for (long pc : new long[] {b.start() + off, b.start() + off + 1}) {
                        long[] chain = chain(jvm, b, pc);
                        if (chain != null && off == 40 && pc == b.start() + off && !inlined.containsKey(b.address())) {
                            List<String> n = new ArrayList<>();
                            for (long m : chain) {
                                String s = name(jvm, m);
                                n.add(s);
                                if (s != null) {
                                    names.put(m, s);
                                }
                            }
                            inlined.put(b.address(), n);
                        }
                    }
                }
            }
            // Method*s the input itself holds (as an interpreter frame's would be): each region's first words.
            for (FakeProcessMemory.Region r : mem.regions()) {
                ByteBuffer bb = ByteBuffer.wrap(r.bytes()).order(ByteOrder.LITTLE_ENDIAN);
                for (int i = 0; i + 8 <= Math.min(64, r.bytes().length); i += 8) {
                    name(jvm, bb.getLong(i));
                }
            }
            int rows = table(cc);
            return new Report(null, cc.heaps(), cc.blobs(), names, inlined, rows, List.of(), List.of(), 0);
        }

        private static Report failed(String why) {
            return new Report(why, List.of(), List.of(), Map.of(), Map.of(), -1, List.of(), List.of(), 0);
        }

        /** An operation that read after the process was gone must have said so: ProcessGoneException, nothing else. */
        private void notSwallowed(long goneBefore, String op, Exception thrown) {
            if (mem.readsWhileGone() > goneBefore) {
                throw new AssertionError(op + " read from an exited process and "
                        + (thrown == null ? "returned normally" : "threw " + thrown), thrown);
            }
        }

        String name(HotSpotJvm jvm, long method) {
            long gone = mem.readsWhileGone();
            mem.mark();
            Optional<String> n;
            try {
                n = jvm.methodName(method);
            } catch (ProcessGoneException e) {
                return null;
            } catch (IOException e) {
                throw new AssertionError("methodName: an IOException while the process lives", e);
            }
            notSwallowed(gone, "methodName", null);
            n.ifPresent(this::checkMethodName);
            return n.orElse(null);
        }

        long[] chain(HotSpotJvm jvm, CodeBlob b, long pc) {
            long gone = mem.readsWhileGone();
            mem.mark();
            long[] chain;
            try {
                chain = jvm.scopeMethods(b, pc);
            } catch (ProcessGoneException e) {
                return null;
            } catch (IOException e) {
                throw new AssertionError("scopeMethods: an IOException while the process lives", e);
            }
            notSwallowed(gone, "scopeMethods", null);
            if (chain != null) {
                if (chain.length < 1 || chain.length > NmethodScopes.MAX_DEPTH || chain[chain.length - 1] != b.method()) {
                    throw new AssertionError("an inlining chain of " + chain.length + " not ending in the nmethod's method");
                }
                for (long m : chain) {
                    if (m == 0 || (m & 7) != 0) {
                        throw new AssertionError("a chain's Method* 0x" + Long.toHexString(m));
                    }
                }
            }
            return chain;
        }

        void checkCodeCache(CodeCache cc) {
            List<CodeCache.Range> heaps = cc.heaps();
            long total = 0;
            for (int i = 0; i < heaps.size(); i++) {
                CodeCache.Range h = heaps.get(i);
                if (h.low() <= 0 || h.high() <= h.low()) {
                    throw new AssertionError("heap " + h + " is empty or negative");
                }
                total += h.high() - h.low();
                for (int j = 0; j < i; j++) {
                    CodeCache.Range o = heaps.get(j);
                    if (h.low() < o.high() && o.low() < h.high()) {
                        throw new AssertionError("heaps " + o + " and " + h + " overlap");
                    }
                }
            }
            if (total > CODE_CACHE_LIMIT) {
                throw new AssertionError("heaps of " + total + " bytes, more than a code cache can have");
            }
            CodeBlob prev = null;
            for (CodeBlob b : cc.blobs()) {
                CodeCache.Range in = null;
                for (CodeCache.Range h : heaps) {
                    if (b.address() >= h.low() && b.end() <= h.high()) {
                        in = h;
                    }
                }
                if (in == null) {
                    throw new AssertionError("blob " + b + " outside every heap " + heaps);
                }
                if (b.start() < b.address() || b.end() < b.start()) {
                    throw new AssertionError("blob " + b + ": code outside the blob");
                }
                if (!mem.mapped(b.address(), 16)) {
                    throw new AssertionError("blob " + b + ": its header is not mapped, so was never read");
                }
                if (b.frameCompleteAddress() != -1 && (b.frameCompleteAddress() < b.start() || b.frameCompleteAddress() > b.end())) {
                    throw new AssertionError("blob " + b + ": frame complete outside its code");
                }
                if (b.frameSizeBytes() < -1 || b.frameSizeBytes() > (8 << 20) || (b.frameSizeBytes() > 0 && b.frameSizeBytes() % 8 != 0)) {
                    throw new AssertionError("blob " + b + ": frame size");
                }
                if (b.kind() != CodeBlob.Kind.NMETHOD && b.method() != 0) {
                    throw new AssertionError("blob " + b + ": a method without being an nmethod");
                }
                if (prev != null && b.address() >= in.low() && prev.address() >= in.low() && prev.address() < in.high()
                        && b.address() < prev.end()) {
                    throw new AssertionError("blobs " + prev + " and " + b + " out of order or overlapping");
                }
                if (!b.name().isEmpty()) {
                    checkCString(b.name());
                }
                prev = b;
            }
        }

        int table(CodeCache cc) {
            CodeCacheUnwindTable.Built built;
            try {
                built = CodeCacheUnwindTable.build("[jit] fuzz", cc);
            } catch (EhFrameException e) {
                return -1;
            }
            UnwindTable t = built.table();
            t.verify();
            if (t.rowCount() > 0) {
                long low = Long.MAX_VALUE;
                long high = Long.MIN_VALUE;
                for (CodeCache.Range h : cc.heaps()) {
                    low = Math.min(low, h.low());
                    high = Math.max(high, h.high());
                }
                if (t.pcBase() > low && (t.pcBase() & ~0xffffL) != t.pcBase() || t.pcEnd() > high + (1 << 16)) {
                    throw new AssertionError("table [0x" + Long.toHexString(t.pcBase()) + ", 0x" + Long.toHexString(t.pcEnd())
                            + ") beyond the heaps");
                }
            }
            if (built.compiledBlobs() + built.interpreterBlobs() + built.undescribedBlobs() != cc.blobs().size()) {
                throw new AssertionError("the table describes " + built + " of " + cc.blobs().size() + " blobs");
            }
            return t.rowCount();
        }

        void checkCString(String s) {
            if (checkedNames.size() < 64 && checkedNames.add(s) && !mem.holdsCString(s)) {
                throw new AssertionError("name '" + s + "' is no string of the process");
            }
        }

        /** "pkg.Class.method": the method's and the class's Symbol bytes are in the process. */
        void checkMethodName(String n) {
            if (checkedNames.size() >= 64 || !checkedNames.add(n)) {
                return;
            }
            int dot = n.lastIndexOf('.');
            if (dot <= 0 || dot == n.length() - 1) {
                throw new AssertionError("method name '" + n + "' is not Class.method");
            }
            String method = n.substring(dot + 1);
            String cls = n.substring(0, dot).replace('.', '/');
            if (!MethodNames.legalMethodName(method) || !mem.holds(modifiedUtf8(method))) {
                throw new AssertionError("method '" + method + "' of '" + n + "' is no Symbol of the process");
            }
            int hidden = cls.lastIndexOf("/0x");
            String hiddenForm = hidden > 0 ? cls.substring(0, hidden) + "+" + cls.substring(hidden + 1) : cls;
            if (!mem.holds(modifiedUtf8(cls)) && !mem.holds(modifiedUtf8(hiddenForm))) {
                throw new AssertionError("class '" + cls + "' of '" + n + "' is no Symbol of the process");
            }
        }
    }

    static byte[] modifiedUtf8(String s) {
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c >= 1 && c < 0x80) {
                out.write(c);
            } else if (c < 0x800) {
                out.write(0xC0 | (c >> 6));
                out.write(0x80 | (c & 0x3F));
            } else {
                out.write(0xE0 | (c >> 12));
                out.write(0x80 | ((c >> 6) & 0x3F));
                out.write(0x80 | (c & 0x3F));
            }
        }
        return out.toByteArray();
    }

    /**
     * The process behind the runtime seam for {@link #SECONDS} simulated seconds: each second a table request, a
     * rescan check, names for every blob's code and an address none holds (a hint), and an interpreter frame's
     * {@code Method*}. A fresh memory of the same input, so its counts are the seam's own.
     */
    private static List<RuntimeFrame> seam(byte[] input) {
        FakeProcessMemory mem = SyntheticJvm.decode(input);
        mem.cap(Long.MAX_VALUE, Long.MAX_VALUE);
        long[] seconds = {1};
        java.util.function.LongSupplier clock = () -> seconds[0] * 1_000_000_000L + mem.reads() * READ_NANOS;
        HotSpotRuntime runtime = new HotSpotRuntime(pid -> Optional.of(HotSpotJvm.read(pid, mem, "/fake/libjvm.so",
                SyntheticJvm::symbol)), clock);
        Optional<RuntimeProcess> opened;
        try {
            opened = runtime.open(PID, "java");
        } catch (IOException e) {
            if (e instanceof ProcessGoneException) {
                return List.of();
            }
            throw new UncheckedIOException("HotSpotRuntime.open: an IOException while the process lives", e);
        }
        if (opened.isEmpty()) {
            checkLogs(0);
            return List.of();
        }
        java.util.Set<RuntimeFrame> frames = new java.util.LinkedHashSet<>();
        long perOpMax = 0;
        int reading = 0;
        try (RuntimeProcess p = opened.get()) {
            List<Long> addresses = new ArrayList<>();
            Set<Long> methods = new HashSet<>();
            for (int s = 0; s < SECONDS; s++) {
                if (mem.gone()) {
                    break; // the process registry forgets a process that exited: nothing reads it again
                }
                seconds[0]++;
                long before = mem.reads();
                CodeTable t = p.codeTable(clock.getAsLong());
                boolean refreshed = p.refreshCode(clock.getAsLong());
                long reads = mem.reads() - before;
                if (reads > 0) {
                    reading++;
                }
                perOpMax = Math.max(perOpMax, reads);
                if (t != null && addresses.isEmpty()) {
                    addresses.add(t.ranges().getFirst().low());
                }
                if (s == 0 || refreshed) {
                    addresses.clear();
                    if (t != null) {
                        for (CodeTable.Range r : t.ranges()) {
                            int n = 0;
                            for (long a = r.low(); a < r.high() && n++ < 256; a += 16) {
                                addresses.add(a);
                            }
                        }
                    }
                }
                before = mem.reads();
                for (long a : addresses) {
                    RuntimeFrame f = p.code(a, false, clock.getAsLong());
                    if (f != null && frames.size() < 4096) {
                        frames.add(f);
                    }
                }
                p.code(0x1000, true, clock.getAsLong()); // nothing holds it: a hint each second
                for (long m : methods) {
                    RuntimeFrame f = p.taggedFrame(FrameType.HOTSPOT_METHOD, InterpreterFrameStep.value(m, (int) (m & 0xfff)));
                    if (f.function() != null && frames.size() < 4096) {
                        frames.add(f);
                    }
                }
                if (mem.reads() - before > 0 && reads == 0) {
                    reading++;
                }
                if (s == 0) {
                    for (FakeProcessMemory.Region r : mem.regions()) {
                        methods.add(r.base() + 64);
                    }
                }
            }
        }
        // The schedule: after reads that find nothing new, at most every 1, 2, 4... 30 s; hints bring one read on
        // within 250 ms but count for nothing for 10 s after one that found nothing. 100 s: under 20 reads.
        if (reading > SECONDS / 5) {
            throw new AssertionError("the seam read the process in " + reading + " of " + SECONDS + " simulated seconds");
        }
        checkLogs(1);
        Checks names = new Checks(SyntheticJvm.decode(input));
        for (RuntimeFrame f : frames) {
            if (f.function() == null) {
                continue;
            }
            if (f.function().startsWith("[" + HotSpotProcess.INTERPRETER_CODELET) && f.function().endsWith("]")) {
                // an interpreter codelet: its description is the process's string
                names.checkCString(f.function().substring(1 + HotSpotProcess.INTERPRETER_CODELET.length(), f.function().length() - 1));
            } else if (f.function().startsWith("[") && f.function().endsWith("]")) {
                names.checkCString(f.function().substring(1, f.function().length() - 1));
            } else {
                names.checkMethodName(f.function());
                f.inlined().forEach(names::checkMethodName);
            }
        }
        return List.copyOf(frames);
    }

    /**
     * What the runtime logged about the process: at most one line saying it is not usable (or what of it is not), and
     * {@code infos} at most of other INFO lines (the table's summary).
     */
    private static void checkLogs(int infos) {
        List<LogRecord> rs;
        synchronized (RECORDS) {
            rs = List.copyOf(RECORDS);
        }
        int problems = 0;
        int other = 0;
        for (LogRecord r : rs) {
            String m = r.getMessage();
            if (!m.contains("pid " + PID)) {
                throw new AssertionError("a log line that names no pid: " + m);
            }
            if (r.getLevel().intValue() >= Level.WARNING.intValue() || m.contains("cannot")) {
                problems++;
            } else {
                other++;
            }
        }
        if (problems > 1 || other > infos) {
            throw new AssertionError("logged about one process " + rs.size() + " times: "
                    + rs.stream().map(r -> r.getLevel() + " " + r.getMessage()).toList());
        }
    }
}
