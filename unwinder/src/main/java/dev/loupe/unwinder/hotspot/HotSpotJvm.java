package dev.loupe.unwinder.hotspot;

import dev.loupe.unwinder.elf.ElfException;
import dev.loupe.unwinder.elf.ElfLoadSegments;
import dev.loupe.unwinder.proc.MapEntry;
import dev.loupe.unwinder.proc.ProcMaps;
import dev.loupe.unwinder.proc.ProcessGoneException;
import dev.loupe.unwinder.proc.ProcessMemory;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.List;
import java.util.Optional;

/**
 * A running HotSpot JVM read from outside, as the serviceability agent reads it: libjvm.so's exported
 * {@code gHotSpotVM*} tables give the layout of the JVM's own structures, which are then read from
 * {@code /proc/PID/mem}. No attach, no agent, no JVM flags; the JVM is never written to or paused, so every
 * snapshot races with it (see {@link #codeCache()}).
 *
 * <p>Not thread-safe beyond its methods being synchronized; one instance per process.
 */
public final class HotSpotJvm implements AutoCloseable {
    /** Method names remembered, per Method* (a Method* freed by class unloading and reused keeps its old name). */
    static final int MAX_CACHED_METHODS = 16_384; // ~2 MB a JVM at worst; a profile's hot methods are far fewer
    private static final int MAX_CACHED_BLOB_NAMES = 16_384;

    private final int pid;
    private final ProcessMemory mem;
    private final VmStructs structs;
    private final Layout layout;
    private final String vmVersion;
    private final CodeCacheReader codeCacheReader;
    private final MethodNames methodNames;
    private final NmethodScopes scopes; // null: the JVM's table lacks its debug-information fields
    private final MethodLines lines; // null: the JVM's table lacks a field of line number tables
    private final Map<Long, Optional<String>> methodCache = new LinkedHashMap<>(1024, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Long, Optional<String>> e) {
            return size() > MAX_CACHED_METHODS;
        }
    };
    private final Map<Long, String> blobNames = new HashMap<>();
    private final CStrings strings;
    /** {@code StubCodeDesc::_list} (.symtab; not in VMStructs): HotSpot's generated stubs by name and range. */
    static final String STUB_LIST_SYMBOL = "_ZN12StubCodeDesc5_listE";
    /** Stubs read from the list at most: JDK 25 has about 300. */
    static final int MAX_STUBS = 4096;
    private final long stubList; // the list head's address, or -1 where libjvm keeps no .symtab

    private HotSpotJvm(int pid, ProcessMemory mem, VmStructs structs, Layout layout, Map<Long, String> vtables, long stubList)
            throws IOException, HotSpotException {
        this.pid = pid;
        this.stubList = stubList;
        this.mem = mem;
        this.structs = structs;
        this.layout = layout;
        this.strings = new CStrings(mem);
        this.vmVersion = readVersion();
        this.codeCacheReader = new CodeCacheReader(mem, layout, vtables, this::blobName);
        this.methodNames = new MethodNames(mem, layout);
        this.scopes = layout.scopes == null ? null : new NmethodScopes(mem, layout.scopes);
        MethodLines ml;
        try {
            ml = new MethodLines(mem, structs, layout, methodNames, () -> scopes == null ? -1 : scopes.excluded());
        } catch (HotSpotException e) {
            ml = null; // frames keep their names, without lines
        }
        this.lines = ml;
    }

    public static Optional<HotSpotJvm> open(Path procRoot, int pid) throws IOException, HotSpotException {
        List<MapEntry> maps = ProcMaps.read(procRoot, pid);
        MapEntry found = null;
        for (MapEntry m : maps) {
            if (m.fileBacked() && isLibjvm(m.path()) && (found == null || (m.executable() && !found.executable()))) {
                found = m;
            }
        }
        if (found == null) {
            return Optional.empty();
        }
        MapEntry jvm = found;
        LibjvmSymbols syms = readSymbols(procRoot, pid, jvm);
        long b;
        try {
            b = ElfLoadSegments.bias(syms.loadSegments, jvm.start(), jvm.offset());
        } catch (ElfException e) {
            throw new HotSpotException(jvm.path() + ": " + e.getMessage());
        }
        long bias = b;
        ProcessMemory mem = ProcessMemory.open(procRoot, pid);
        try {
            return Optional.of(read(pid, mem, jvm.path(), name -> {
                long v = syms.vaddr(name);
                return v < 0 ? -1 : v + bias;
            }));
        } catch (IOException | HotSpotException | RuntimeException e) {
            mem.close();
            throw e;
        }
    }

    /**
     * Reads the JVM whose memory is {@code mem}: {@code symbols} gives the runtime address of a libjvm symbol, or -1
     * where {@code libjvm} (named in messages) has none. Production's {@link #open} and the fuzz targets' synthetic
     * processes both come here; {@code mem} is the JVM's on success and left open on failure (the caller's).
     *
     * @throws HotSpotException the tables, or what they describe, do not hold together or point at memory that is
     *                          not mapped: a runtime that is not usable, for as long as the process lives
     * @throws IOException      the process is gone ({@link ProcessGoneException})
     */
    static HotSpotJvm read(int pid, ProcessMemory mem, String libjvm, java.util.function.ToLongFunction<String> symbols)
            throws IOException, HotSpotException {
        try {
            return readTables(pid, mem, libjvm, symbols);
        } catch (ProcessGoneException e) {
            throw e;
        } catch (IOException e) {
            // Memory the tables point at is not mapped while the process lives: it will not be on a second look.
            throw new HotSpotException(libjvm + "'s tables point at memory that is not mapped: " + e.getMessage());
        }
    }

    private static HotSpotJvm readTables(int pid, ProcessMemory mem, String libjvm, java.util.function.ToLongFunction<String> symbols)
            throws IOException, HotSpotException {
        VmStructs vs = VmStructs.read(mem, name -> {
            long v = symbols.applyAsLong(name);
            if (v < 0) {
                throw new HotSpotException(libjvm + " exports no " + name);
            }
            return v;
        });
        Layout layout = new Layout(vs);
        Map<Long, String> vtables = new HashMap<>();
        if (layout.kind == null) {
            // No CodeBlob::_kind: a blob's class is its C++ vtable, found by .symtab's _ZTV symbols (the vtable
            // pointer stored in an object is 16 bytes in, past offset-to-top and the typeinfo pointer).
            for (VmStructs.Type t : vs.types().values()) {
                if (descendsFrom(vs, t, "CodeBlob")) {
                    long v = symbols.applyAsLong("_ZTV" + t.name().length() + t.name());
                    if (v > 0) {
                        vtables.put(v + 16, t.name());
                    }
                }
            }
        }
        return new HotSpotJvm(pid, mem, vs, layout, vtables, symbols.applyAsLong(STUB_LIST_SYMBOL));
    }

    /**
     * A generated stub: {@code group::name} (HotSpot's own way to print it, e.g. StubRoutines::jlong_disjoint_arraycopy), [begin, end).
     * {@code entry} and {@code enter}: for a stub {@link #framedStubs} found framed, the offsets from begin of the first
     * byte that runs when the stub is called (a stub may begin with a jump that only its own code takes) and of its
     * {@code enter()}'s {@code push rbp}; 0 and 0 for a stub that begins with {@code enter()}, and for stubs not read.
     */
    public record Stub(String name, long begin, long end, int entry, int enter) {
        public Stub(String name, long begin, long end) {
            this(name, begin, end, 0, 0);
        }
    }

    /**
     * The stubs HotSpot's StubCodeGenerator made (call stub, arraycopy, CRC, crypto... in the StubRoutines blobs), from
     * {@code StubCodeDesc::_list}, sorted by begin; empty where libjvm has no .symtab. Its layout is not in VMStructs:
     * {@code _next, _group, _name}, then {@code _begin, _end} (JDK 9+) or an int {@code _index} first (JDK 8); a
     * descriptor is kept only when its two names are printable strings and its range is non-empty and below 1 MiB,
     * and the walk stops at the first that is not (a layout this does not know gives no names, not wrong ones).
     */
    public synchronized List<Stub> stubs() throws IOException {
        if (stubList <= 0) {
            return List.of();
        }
        List<Stub> out = new ArrayList<>();
        long at = mem.readLong(stubList);
        int beginWord = -1;
        for (int n = 0; at != 0 && n < MAX_STUBS; n++) {
            java.nio.ByteBuffer d = mem.read(at, 48);
            long next = d.getLong(0);
            String group;
            String name;
            try {
                group = strings.read(d.getLong(8), 128);
                name = strings.read(d.getLong(16), 128);
            } catch (IOException e) {
                break;
            }
            if (beginWord < 0) {
                beginWord = stubRange(d, 3) ? 3 : stubRange(d, 4) ? 4 : 0;
            }
            if (beginWord == 0 || !stubRange(d, beginWord)) {
                break;
            }
            out.add(new Stub(group.isEmpty() ? name : group + "::" + name, d.getLong(8 * beginWord), d.getLong(8 * beginWord + 8)));
            at = next;
        }
        out.sort(java.util.Comparator.comparingLong(Stub::begin));
        return List.copyOf(out);
    }

    /**
     * {@code push rbp; mov rbp, rsp}: the prologue of {@code MacroAssembler::enter()}, which most stubs begin with. HotSpot's
     * assembler encodes the move as 48 8b ec (seen in JDK 25's arraycopy stubs); 48 89 e5 is the same move as gcc writes it.
     */
    private static final int ENTER = 0xec_8b_48_55; // bytes 55 48 8b ec, little-endian
    private static final int ENTER_GCC = 0xe5_89_48_55; // bytes 55 48 89 e5
    /** How far into a stub its {@code enter()} is looked for. */
    private static final int ENTER_SEARCH = 16;

    /**
     * Of {@code stubs}, those whose code reaches {@code enter()} ({@code push rbp; mov rbp, rsp}) before anything else
     * moves RSP or RBP, read from the process's memory: their frames can be stepped by RBP (arraycopy, fill, CRC,
     * crypto...), although their blobs record no frame size. Before the {@code enter()} a stub may run 64-bit moves
     * between registers other than RSP and RBP (JDK 21's and 25's fill stubs begin with {@code mov r11, rdx}); a stub may begin
     * with a 5-byte jump that only its own framed code takes (the generic arraycopy's jump to its failure exit), whose
     * bytes then lie before the stub's {@linkplain Stub#entry entry}. A stub that cannot be read is left out, and so is
     * one that begins with anything else.
     */
    public List<Stub> framedStubs(List<Stub> stubs) {
        List<Stub> out = new ArrayList<>();
        for (Stub st : stubs) {
            try {
                long size = st.end() - st.begin();
                if (size <= 4) {
                    continue;
                }
                int[] at = enterAt(mem.read(st.begin(), (int) Math.min(size, ENTER_SEARCH)));
                if (at != null) {
                    out.add(new Stub(st.name(), st.begin(), st.end(), at[0], at[1]));
                }
            } catch (IOException e) {
                // unmapped or gone: no rows for it
            }
        }
        return List.copyOf(out);
    }

    /** {entry, enter} of a stub's first bytes ({@link #framedStubs}), or null where they do not reach an {@code enter()}. */
    static int[] enterAt(java.nio.ByteBuffer code) {
        code = code.duplicate().order(java.nio.ByteOrder.LITTLE_ENDIAN);
        int n = code.limit();
        int entry = 0;
        int pos = 0;
        if (n >= 9 && (code.get(0) & 0xff) == 0xe9) {
            entry = pos = 5; // jmp rel32, never fallen through
        }
        while (pos + 4 <= n) {
            int word = code.getInt(pos);
            if (word == ENTER || word == ENTER_GCC) {
                return new int[] {entry, pos};
            }
            if (pos + 3 > n || !registerMove(code.get(pos) & 0xff, code.get(pos + 1) & 0xff, code.get(pos + 2) & 0xff)) {
                return null;
            }
            pos += 3;
        }
        return null;
    }

    /**
     * {@code REX.W mov r64, r64} (8b or 89, both operands registers) with neither operand RSP nor RBP: a move that leaves
     * the stack and the frame pointer as they were.
     */
    private static boolean registerMove(int rex, int opcode, int modrm) {
        if ((rex & 0xf8) != 0x48 || (opcode != 0x8b && opcode != 0x89) || (modrm >> 6) != 3) {
            return false;
        }
        int reg = ((rex >> 2) & 1) << 3 | (modrm >> 3) & 7;
        int rm = (rex & 1) << 3 | modrm & 7;
        return reg != 4 && reg != 5 && rm != 4 && rm != 5;
    }

    /** An interpreter codelet: its description (a bytecode's name, "method entry point (kind = zerolocals)"...), [begin, end). */
    public record Codelet(String description, long begin, long end) {}

    /** Codelets the interpreter's queue may hold: JDK 25's has about 270. */
    static final int MAX_CODELETS = 4096;

    /**
     * The template interpreter's codelets, from {@code AbstractInterpreter::_code} (a StubQueue whose buffer holds them
     * one after another, each {@code _size} bytes from its header on) in address order; empty where the JVM's
     * table lacks their fields. The walk stops at the first codelet whose size or description does not hold together
     * (a size of 0 or past the queue's end, a description that is no printable string).
     */
    public synchronized List<Codelet> codelets() throws IOException {
        Layout.Codelets c = layout.codelets;
        if (c == null) {
            return List.of();
        }
        long queue = mem.readLong(c.codeAddress());
        if (queue == 0) {
            return List.of();
        }
        java.nio.ByteBuffer q = mem.read(queue, (int) c.queueSize());
        long buffer = c.stubBuffer().get(q, 0);
        long begin = c.queueBegin().get(q, 0);
        long end = c.queueEnd().get(q, 0);
        if (buffer == 0 || begin < 0 || end < begin || end - begin > 64L << 20) {
            return List.of();
        }
        List<Codelet> out = new ArrayList<>();
        for (long at = begin; at < end && out.size() < MAX_CODELETS; ) {
            java.nio.ByteBuffer d = mem.read(buffer + at, (int) c.codeletSize());
            long size = c.size().get(d, 0);
            if (size <= c.codeletSize() || at + size > end) {
                break;
            }
            String description;
            try {
                description = strings.read(c.description().get(d, 0), 128);
            } catch (IOException e) {
                break;
            }
            if (description.isEmpty()) {
                break;
            }
            out.add(new Codelet(description, buffer + at, buffer + at + size));
            at += size;
        }
        return List.copyOf(out);
    }

    private static boolean stubRange(java.nio.ByteBuffer d, int word) {
        long begin = d.getLong(8 * word);
        long end = d.getLong(8 * word + 8);
        return begin > 0 && end > begin && end - begin < (1 << 20);
    }

    /** Whether a mapped file is HotSpot's libjvm.so: what makes a process a JVM (the one definition). */
    public static boolean isLibjvm(String path) {
        return path.endsWith("/libjvm.so");
    }

    private static LibjvmSymbols readSymbols(Path procRoot, int pid, MapEntry m) throws IOException, HotSpotException {
        Path pidDir = procRoot.resolve(Integer.toString(pid));
        List<Path> candidates = new ArrayList<>(2);
        candidates.add(pidDir.resolve("map_files").resolve(m.mapFilesName()));
        if (!m.deleted()) {
            candidates.add(pidDir.resolve("root").resolve(m.path().substring(1)));
        }
        IOException last = null;
        for (Path p : candidates) {
            if (!Files.isRegularFile(p)) {
                continue;
            }
            try {
                return LibjvmSymbols.read(p);
            } catch (ElfException e) {
                throw new HotSpotException(m.path() + ": " + e.getMessage());
            } catch (IOException e) {
                last = e;
            }
        }
        if (last != null) {
            throw last;
        }
        throw new IOException(m.path() + " of pid " + pid + " is not readable through " + candidates);
    }

    private static boolean descendsFrom(VmStructs vs, VmStructs.Type t, String root) {
        for (int depth = 0; t != null && depth < 32; depth++) {
            if (t.name().equals(root)) {
                return true;
            }
            t = t.superclass() == null ? null : vs.types().get(t.superclass());
        }
        return false;
    }

    private String readVersion() throws IOException, HotSpotException {
        if (layout.vmRelease == 0) {
            return "unknown";
        }
        long p = mem.readLong(layout.vmRelease);
        if (p == 0) {
            return "unknown";
        }
        try {
            return strings.read(p, 256);
        } catch (ProcessGoneException e) {
            throw e;
        } catch (IOException e) {
            throw new HotSpotException("Abstract_VM_Version::_s_vm_release unreadable: " + e.getMessage());
        }
    }

    /**
     * The code blob holding {@code pc}, read now through its heap's segment map (code made since the last
     * {@link #codeCache()}), or empty where the memory does not hold one together.
     */
    public synchronized Optional<CodeBlob> blobAt(long pc) throws IOException, HotSpotException {
        return Optional.ofNullable(codeCacheReader.blobAt(pc));
    }

    /**
     * Where Java code called from C++ ({@code JavaCalls::call_helper}) returns into the call stub
     * ({@code StubRoutines::_call_stub_return_address}, set once at start-up), or 0 if the table has no such field or it
     * is not set yet.
     */
    public synchronized long callStubReturnAddress() throws IOException {
        return layout.callStubReturn == 0 ? 0 : mem.readLong(layout.callStubReturn);
    }

    /** The JVM's release string (Abstract_VM_Version::_s_vm_release, e.g. "25+36-LTS"), or "unknown". */
    public String vmVersion() {
        return vmVersion;
    }

    /**
     * A fresh snapshot of the code cache, its heaps walked block by block in preads of up to 1 MiB. IOException: the
     * memory became unreadable (the process exited). HotSpotException: a heap or block is not what the layout
     * says (a block of length 0 or past its heap's end, a segment map that disagrees); as the JVM allocates while
     * this reads, a rare one may be a race that a retry clears.
     */
    public synchronized CodeCache codeCache() throws IOException, HotSpotException {
        return codeCacheReader.read();
    }

    /**
     * A cheap hash of the code cache's layout (heap ranges and segment maps, a 128th of the heap's bytes): when it
     * is unchanged, a {@link #codeCache()} would almost surely find the same blobs (see CodeCacheReader).
     */
    public synchronized long codeCacheFingerprint() throws IOException, HotSpotException {
        return codeCacheReader.fingerprint();
    }

    /** Used blocks skipped in the last {@link #codeCache()} because their blob did not hold together; for tests. */
    synchronized int lastSkippedBlobs() {
        return codeCacheReader.skipped;
    }

    synchronized List<String> lastSkipReasons() {
        return List.copyOf(codeCacheReader.skipReasons);
    }

    /** Preads the last {@link #codeCache()} took; for tests. */
    synchronized long lastPreads() {
        return codeCacheReader.preads;
    }

    /**
     * "pkg.Class.method" (inner classes keep '$') for a {@code Method*}, or empty if it is not one (or memory there
     * is not mapped). IOException: the process is gone. Results are cached per pointer, at most
     * {@link #MAX_CACHED_METHODS}.
     */
    public synchronized Optional<String> methodName(long method) throws IOException {
        Optional<String> cached = methodCache.get(method);
        if (cached != null) {
            return cached;
        }
        Optional<String> name;
        try {
            name = methodNames.name(method);
        } catch (IOException e) {
            rethrowIfGone(e);
            name = Optional.empty();
        }
        methodCache.put(method, name);
        return name;
    }

    /**
     * Why inlined frames cannot be read from this JVM (its table lacks a field they need), or empty if they can.
     */
    public Optional<String> inliningUnavailable() {
        return Optional.ofNullable(layout.scopesUnavailable);
    }

    /**
     * The {@code Method*}s of the frames an nmethod's code at {@code pc} stands for: the methods compiled into it
     * there by inlining, innermost first, then the nmethod's own {@code method}. A single element where nothing was
     * inlined; null where its debug information cannot be read or does not hold together (see NmethodScopes).
     * {@code pc} is a return address for a caller's frame (its call site's own record) or the sampled pc of a leaf
     * (the record of the next safepoint, as HotSpot finds one). IOException: the process is gone.
     */
    public synchronized long[] scopeMethods(CodeBlob nmethod, long pc) throws IOException {
        if (scopes == null || nmethod.kind() != CodeBlob.Kind.NMETHOD || nmethod.method() == 0) {
            return null;
        }
        try {
            return scopes.methodsAt(nmethod.address(), nmethod.start(), nmethod.method(), pc);
        } catch (IOException e) {
            rethrowIfGone(e); // else freed while read
            return null;
        }
    }

    /**
     * As {@link #scopeMethods}, with each scope's bci (see {@link NmethodScopes#scopesAt}); null where that is.
     */
    synchronized NmethodScopes.Chain scopes(CodeBlob nmethod, long pc) throws IOException {
        if (scopes == null || nmethod.kind() != CodeBlob.Kind.NMETHOD || nmethod.method() == 0) {
            return null;
        }
        try {
            return scopes.scopesAt(nmethod.address(), nmethod.start(), nmethod.method(), pc);
        } catch (IOException e) {
            rethrowIfGone(e);
            return null;
        }
    }

    /**
     * The source file (the class's SourceFile, e.g. "Wren.java") and line of {@code bci} in {@code method}; unknown
     * parts null and 0. IOException: the process is gone.
     */
    synchronized MethodLines.Position position(long method, int bci) throws IOException {
        if (lines == null) {
            return MethodLines.Position.UNKNOWN;
        }
        try {
            return lines.at(method, bci);
        } catch (IOException e) {
            rethrowIfGone(e); // else freed while read
            return MethodLines.Position.UNKNOWN;
        }
    }

    /**
     * A read of the JVM's memory failed: an unmapped (or freed) address, or a process that is gone. Rethrows in the
     * second case, which the JVM's own static data, readable while it lives, tells.
     */
    private void rethrowIfGone(IOException e) throws IOException {
        if (e instanceof ProcessGoneException) {
            throw e;
        }
        try {
            mem.readLong(layout.heapsAddress);
        } catch (ProcessGoneException gone) {
            throw gone;
        } catch (IOException unmapped) {
            // The static datum is not mapped either (tables that lie): the process lives, the pointer is stale.
        }
    }

    private String blobName(long address) throws IOException {
        String n = blobNames.get(address);
        if (n == null) {
            try {
                n = strings.read(address, 1024);
            } catch (IOException e) {
                rethrowIfGone(e);
                n = ""; // no name: its frames stay unnamed rather than take a made-up one
            }
            if (blobNames.size() >= MAX_CACHED_BLOB_NAMES) {
                blobNames.clear();
            }
            blobNames.put(address, n);
        }
        return n;
    }

    int pid() {
        return pid;
    }

    VmStructs structs() {
        return structs;
    }

    @Override
    public void close() throws IOException {
        mem.close();
    }
}
