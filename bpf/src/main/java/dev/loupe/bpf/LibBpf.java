package dev.loupe.bpf;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * Typed FFM binding to libbpf 1.1 ({@code libbpf.so.1}). Every failing call becomes a {@link BpfException}
 * carrying the function name, errno text and what libbpf printed during the call.
 *
 * <p>libbpf conventions: pointer-returning calls return NULL and set errno; int-returning calls
 * return -errno.
 */
final class LibBpf {
    private static final System.Logger LOG = System.getLogger("dev.loupe.bpf.libbpf");
    private static final Linker LINKER = Linker.nativeLinker();
    private static final SymbolLookup LIB;
    private static final String LOAD_ERROR;

    static {
        SymbolLookup lib = null;
        String error = null;
        try {
            lib = SymbolLookup.libraryLookup("libbpf.so.1", Arena.global());
        } catch (IllegalArgumentException e) {
            error = "libbpf missing: libbpf.so.1 could not be loaded (install libbpf1)";
        }
        LIB = lib;
        LOAD_ERROR = error;
    }

    /** Null when libbpf.so.1 loads and has every function we bind; otherwise one line saying why not. */
    static String loadError() {
        if (LOAD_ERROR != null) {
            return LOAD_ERROR;
        }
        if (missingSymbol != null) {
            return "libbpf too old: libbpf.so.1 has no " + missingSymbol + " (need libbpf >= 1.0)";
        }
        return null;
    }

    private static final Linker.Option ERRNO = Linker.Option.captureCallState("errno");
    private static String missingSymbol;

    private static MethodHandle fn(String name, FunctionDescriptor fd, boolean captureErrno) {
        if (LIB == null) {
            return null;
        }
        var sym = LIB.find(name);
        if (sym.isEmpty()) {
            if (missingSymbol == null) {
                missingSymbol = name;
            }
            return null;
        }
        return captureErrno ? LINKER.downcallHandle(sym.get(), fd, ERRNO) : LINKER.downcallHandle(sym.get(), fd);
    }

    private static final MethodHandle OBJECT_OPEN_MEM = fn("bpf_object__open_mem",
            FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_LONG, ADDRESS), true);
    private static final MethodHandle OBJECT_LOAD = fn("bpf_object__load",
            FunctionDescriptor.of(JAVA_INT, ADDRESS), false);
    private static final MethodHandle OBJECT_CLOSE = fn("bpf_object__close",
            FunctionDescriptor.ofVoid(ADDRESS), false);
    private static final MethodHandle FIND_PROGRAM = fn("bpf_object__find_program_by_name",
            FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS), true);
    private static final MethodHandle FIND_MAP = fn("bpf_object__find_map_by_name",
            FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS), true);
    private static final MethodHandle MAP_FD = fn("bpf_map__fd", FunctionDescriptor.of(JAVA_INT, ADDRESS), false);
    private static final MethodHandle MAP_SET_MAX_ENTRIES = fn("bpf_map__set_max_entries",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT), false);
    private static final MethodHandle PROGRAM_FD = fn("bpf_program__fd",
            FunctionDescriptor.of(JAVA_INT, ADDRESS), false);
    private static final MethodHandle ATTACH_PERF_EVENT = fn("bpf_program__attach_perf_event",
            FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_INT), true);
    private static final MethodHandle LINK_DESTROY = fn("bpf_link__destroy",
            FunctionDescriptor.of(JAVA_INT, ADDRESS), false);
    private static final MethodHandle MAP_UPDATE_ELEM = fn("bpf_map_update_elem",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG), false);
    private static final MethodHandle MAP_LOOKUP_ELEM = fn("bpf_map_lookup_elem",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, ADDRESS), false);
    private static final MethodHandle MAP_DELETE_ELEM = fn("bpf_map_delete_elem",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS), false);
    private static final MethodHandle RING_BUFFER_NEW = fn("ring_buffer__new",
            FunctionDescriptor.of(ADDRESS, JAVA_INT, ADDRESS, ADDRESS, ADDRESS), true);
    private static final MethodHandle RING_BUFFER_POLL = fn("ring_buffer__poll",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT), false);
    private static final MethodHandle RING_BUFFER_CONSUME = fn("ring_buffer__consume",
            FunctionDescriptor.of(JAVA_INT, ADDRESS), false);
    private static final MethodHandle RING_BUFFER_FREE = fn("ring_buffer__free",
            FunctionDescriptor.ofVoid(ADDRESS), false);
    private static final MethodHandle NUM_POSSIBLE_CPUS = fn("libbpf_num_possible_cpus",
            FunctionDescriptor.of(JAVA_INT), false);
    private static final MethodHandle OBJ_GET_INFO_BY_FD = fn("bpf_obj_get_info_by_fd",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, ADDRESS), false);
    private static final MethodHandle SET_PRINT = fn("libbpf_set_print",
            FunctionDescriptor.of(ADDRESS, ADDRESS), false);

    /** ring_buffer_sample_fn: int (*)(void *ctx, void *data, size_t size). */
    static final FunctionDescriptor RING_BUFFER_SAMPLE_FN = FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG);

    private LibBpf() {}

    // ---- libbpf's log: captured so failures carry libbpf's own explanation ----

    private record LogLine(long thread, int level, String text) {}

    private static final int LOG_CAPACITY = 512;
    private static final Deque<LogLine> RECENT = new ArrayDeque<>();
    private static long logSeq;

    static {
        if (LIB != null) {
            try {
                MethodHandle print = MethodHandles.lookup().findStatic(LibBpf.class, "onPrint",
                        MethodType.methodType(int.class, int.class, MemorySegment.class, MemorySegment.class));
                MemorySegment stub = LINKER.upcallStub(print,
                        FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, ADDRESS), Arena.global());
                MemorySegment ignored = (MemorySegment) SET_PRINT.invokeExact(stub);
            } catch (Throwable t) {
                LOG.log(System.Logger.Level.WARNING, "could not install libbpf print callback: " + t);
            }
        }
    }

    /** libbpf_print_fn_t. Must never throw: an exception escaping an upcall kills the JVM. */
    private static int onPrint(int level, MemorySegment format, MemorySegment vaList) {
        try {
            if (level > 1) { // LIBBPF_DEBUG: too chatty to keep
                return 0;
            }
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment buf = arena.allocate(2048);
                int n = (int) LibC.VSNPRINTF.invokeExact(buf, 2048L, format, vaList);
                String text = n < 0 ? "" : buf.getString(0).stripTrailing();
                synchronized (RECENT) {
                    if (RECENT.size() == LOG_CAPACITY) {
                        RECENT.removeFirst();
                    }
                    RECENT.addLast(new LogLine(Thread.currentThread().threadId(), level, text));
                    logSeq++;
                }
                LOG.log(level == 0 ? System.Logger.Level.DEBUG : System.Logger.Level.TRACE, text);
            }
        } catch (Throwable t) {
            // swallow: see method comment
        }
        return 0;
    }

    /** What libbpf printed on this thread since the last call of this method, at most the last 40 lines. */
    private static String drainLog() {
        long me = Thread.currentThread().threadId();
        List<String> mine = new ArrayList<>();
        synchronized (RECENT) {
            RECENT.removeIf(l -> {
                if (l.thread() == me) {
                    mine.add(l.text());
                    return true;
                }
                return false;
            });
        }
        List<String> tail = mine.size() > 40 ? mine.subList(mine.size() - 40, mine.size()) : mine;
        return String.join("\n  ", tail);
    }

    private static BpfException failure(String call, int errno) {
        String log = drainLog();
        String msg = call + " failed: " + Errno.describe(errno) + (log.isEmpty() ? "" : "; libbpf said:\n  " + log);
        return new BpfException(msg, errno);
    }

    private static IllegalStateException downcall(Throwable t) {
        return new IllegalStateException("libbpf downcall failed", t);
    }

    // ---- objects ----

    static MemorySegment objectOpenMem(MemorySegment elf, String objectName) throws BpfException {
        drainLog();
        try (Arena arena = Arena.ofConfined()) {
            // struct bpf_object_open_opts (libbpf 1.1): sz@0, object_name@8, 80 bytes in all.
            MemorySegment opts = arena.allocate(80, 8);
            opts.set(JAVA_LONG, 0, 80);
            opts.set(ADDRESS, 8, arena.allocateFrom(objectName));
            MemorySegment state = arena.allocate(LibC.captureLayout());
            MemorySegment obj = (MemorySegment) OBJECT_OPEN_MEM.invokeExact(state, elf, elf.byteSize(), opts);
            if (obj.address() == 0) {
                throw failure("bpf_object__open_mem(" + objectName + ")", LibC.errno(state));
            }
            return obj;
        } catch (BpfException e) {
            throw e;
        } catch (Throwable t) {
            throw downcall(t);
        }
    }

    static void objectLoad(MemorySegment obj) throws BpfException {
        drainLog();
        int rc;
        try {
            rc = (int) OBJECT_LOAD.invokeExact(obj);
        } catch (Throwable t) {
            throw downcall(t);
        }
        if (rc < 0) {
            throw failure("bpf_object__load", -rc);
        }
    }

    static void objectClose(MemorySegment obj) {
        try {
            OBJECT_CLOSE.invokeExact(obj);
        } catch (Throwable t) {
            throw downcall(t);
        }
    }

    static MemorySegment findProgram(MemorySegment obj, String name) throws BpfException {
        return find(FIND_PROGRAM, "bpf_object__find_program_by_name", obj, name);
    }

    static MemorySegment findMap(MemorySegment obj, String name) throws BpfException {
        return find(FIND_MAP, "bpf_object__find_map_by_name", obj, name);
    }

    private static MemorySegment find(MethodHandle h, String call, MemorySegment obj, String name) throws BpfException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(LibC.captureLayout());
            MemorySegment r = (MemorySegment) h.invokeExact(state, obj, arena.allocateFrom(name));
            if (r.address() == 0) {
                throw failure(call + "(" + name + ")", LibC.errno(state));
            }
            return r;
        } catch (BpfException e) {
            throw e;
        } catch (Throwable t) {
            throw downcall(t);
        }
    }

    static int mapFd(MemorySegment map) throws BpfException {
        return checkFd("bpf_map__fd", invokeInt(MAP_FD, map));
    }

    static int programFd(MemorySegment prog) throws BpfException {
        return checkFd("bpf_program__fd", invokeInt(PROGRAM_FD, prog));
    }

    private static int invokeInt(MethodHandle h, MemorySegment p) {
        try {
            return (int) h.invokeExact(p);
        } catch (Throwable t) {
            throw downcall(t);
        }
    }

    private static int checkFd(String call, int rc) throws BpfException {
        if (rc < 0) {
            throw failure(call, -rc);
        }
        return rc;
    }

    static void mapSetMaxEntries(MemorySegment map, int maxEntries) throws BpfException {
        int rc;
        try {
            rc = (int) MAP_SET_MAX_ENTRIES.invokeExact(map, maxEntries);
        } catch (Throwable t) {
            throw downcall(t);
        }
        if (rc < 0) {
            throw failure("bpf_map__set_max_entries(" + maxEntries + ")", -rc);
        }
    }

    static MemorySegment attachPerfEvent(MemorySegment prog, int perfFd) throws BpfException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(LibC.captureLayout());
            MemorySegment link = (MemorySegment) ATTACH_PERF_EVENT.invokeExact(state, prog, perfFd);
            if (link.address() == 0) {
                throw failure("bpf_program__attach_perf_event(fd " + perfFd + ")", LibC.errno(state));
            }
            return link;
        } catch (BpfException e) {
            throw e;
        } catch (Throwable t) {
            throw downcall(t);
        }
    }

    /** Destroying a perf_event link also closes its perf fd. */
    static void linkDestroy(MemorySegment link) {
        try {
            int ignored = (int) LINK_DESTROY.invokeExact(link);
        } catch (Throwable t) {
            throw downcall(t);
        }
    }

    // ---- map elements (low-level API: fd based) ----

    static void mapUpdate(int fd, MemorySegment key, MemorySegment value, String what) throws BpfException {
        int rc;
        try {
            rc = (int) MAP_UPDATE_ELEM.invokeExact(fd, key, value, 0L);
        } catch (Throwable t) {
            throw downcall(t);
        }
        if (rc < 0) {
            throw failure("bpf_map_update_elem(" + what + ")", -rc);
        }
    }

    static void mapLookup(int fd, MemorySegment key, MemorySegment value, String what) throws BpfException {
        int rc;
        try {
            rc = (int) MAP_LOOKUP_ELEM.invokeExact(fd, key, value);
        } catch (Throwable t) {
            throw downcall(t);
        }
        if (rc < 0) {
            throw failure("bpf_map_lookup_elem(" + what + ")", -rc);
        }
    }

    static void mapDelete(int fd, MemorySegment key, String what) throws BpfException {
        int rc;
        try {
            rc = (int) MAP_DELETE_ELEM.invokeExact(fd, key);
        } catch (Throwable t) {
            throw downcall(t);
        }
        if (rc < 0 && rc != -2) { // -ENOENT: already gone
            throw failure("bpf_map_delete_elem(" + what + ")", -rc);
        }
    }

    // ---- ring buffer ----

    static MemorySegment ringBufferNew(int mapFd, MemorySegment callback) throws BpfException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(LibC.captureLayout());
            MemorySegment rb = (MemorySegment) RING_BUFFER_NEW.invokeExact(state, mapFd, callback,
                    MemorySegment.NULL, MemorySegment.NULL);
            if (rb.address() == 0) {
                throw failure("ring_buffer__new", LibC.errno(state));
            }
            return rb;
        } catch (BpfException e) {
            throw e;
        } catch (Throwable t) {
            throw downcall(t);
        }
    }

    /** Returns records consumed; EINTR counts as 0. */
    static int ringBufferPoll(MemorySegment rb, int timeoutMs) throws BpfException {
        int rc;
        try {
            rc = (int) RING_BUFFER_POLL.invokeExact(rb, timeoutMs);
        } catch (Throwable t) {
            throw downcall(t);
        }
        return ringResult("ring_buffer__poll", rc);
    }

    static int ringBufferConsume(MemorySegment rb) throws BpfException {
        int rc;
        try {
            rc = (int) RING_BUFFER_CONSUME.invokeExact(rb);
        } catch (Throwable t) {
            throw downcall(t);
        }
        return ringResult("ring_buffer__consume", rc);
    }

    private static int ringResult(String call, int rc) throws BpfException {
        if (rc == -4) { // EINTR
            return 0;
        }
        if (rc < 0) {
            throw failure(call, -rc);
        }
        return rc;
    }

    static void ringBufferFree(MemorySegment rb) {
        try {
            RING_BUFFER_FREE.invokeExact(rb);
        } catch (Throwable t) {
            throw downcall(t);
        }
    }

    static int numPossibleCpus() throws BpfException {
        int rc;
        try {
            rc = (int) NUM_POSSIBLE_CPUS.invokeExact();
        } catch (Throwable t) {
            throw downcall(t);
        }
        if (rc < 0) {
            throw failure("libbpf_num_possible_cpus", -rc);
        }
        return rc;
    }

    /** Fills {@code info} (a struct bpf_prog_info / bpf_map_info buffer) for {@code fd}. */
    static void objGetInfoByFd(int fd, MemorySegment info) throws BpfException {
        int rc;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment len = arena.allocateFrom(JAVA_INT, (int) info.byteSize());
            rc = (int) OBJ_GET_INFO_BY_FD.invokeExact(fd, info, len);
        } catch (Throwable t) {
            throw downcall(t);
        }
        if (rc < 0) {
            throw failure("bpf_obj_get_info_by_fd", -rc);
        }
    }
}
