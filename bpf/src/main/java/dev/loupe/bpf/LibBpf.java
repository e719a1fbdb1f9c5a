package dev.loupe.bpf;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.util.ArrayList;
import java.util.List;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BOOLEAN;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The FFM binding to libbpf 1.1 ({@code libbpf.so.1}): every function Loupe calls, bound once at class
 * initialisation into immutable {@link Fn}s. Each {@code Fn} turns libbpf's two error conventions
 * (pointer calls return NULL and set errno; int calls return -errno) into a {@link BpfException} carrying
 * the call, the errno text and what libbpf printed meanwhile ({@link LibBpfLog}).
 */
final class LibBpf {
    private static final Linker LINKER = Linker.nativeLinker();
    private static final Linker.Option ERRNO = Linker.Option.captureCallState("errno");
    private static final SymbolLookup LIB;
    private static final List<String> MISSING = new ArrayList<>();
    private static final String LOAD_ERROR;

    static {
        SymbolLookup lib = null;
        String error = null;
        // -Dloupe.libbpf=PATH: the package's own copy; otherwise the system's, by its soname.
        String path = System.getProperty("loupe.libbpf");
        try {
            lib = path != null ? SymbolLookup.libraryLookup(java.nio.file.Path.of(path), Arena.global())
                    : SymbolLookup.libraryLookup("libbpf.so.1", Arena.global());
        } catch (IllegalArgumentException e) {
            error = path != null ? "libbpf missing: " + path + " could not be loaded (loupe.libbpf)"
                    : "libbpf missing: libbpf.so.1 could not be loaded (install libbpf1)";
        }
        LIB = lib;
        LOAD_ERROR = error;
    }

    /**
     * One libbpf function. Arguments are passed as to the C function, except that a {@link String} becomes
     * a C string for the duration of the call; functions bound with errno capture get the capture segment
     * added here.
     */
    static final class Fn {
        private final String name;
        private final MethodHandle handle;
        private final boolean captureErrno;

        private Fn(String name, MethodHandle handle, boolean captureErrno) {
            this.name = name;
            this.handle = handle;
            this.captureErrno = captureErrno;
        }

        /** A pointer result; NULL becomes a BpfException with errno. {@code what} names the target. */
        MemorySegment pointer(String what, Object... args) throws BpfException {
            LibBpfLog.INSTANCE.drainThisThread(); // earlier lines belong to earlier calls
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment state = captureErrno ? arena.allocate(LibC.captureLayout()) : null;
                MemorySegment r = (MemorySegment) invoke(arena, state, args);
                if (r.address() == 0) {
                    throw failure(what, captureErrno ? LibC.errno(state) : 0);
                }
                return r;
            }
        }

        /** An int result where negative means -errno; returns it otherwise. */
        int status(String what, Object... args) throws BpfException {
            int rc;
            LibBpfLog.INSTANCE.drainThisThread();
            try (Arena arena = Arena.ofConfined()) {
                rc = (int) invoke(arena, null, args);
            }
            if (rc < 0) {
                throw failure(what, -rc);
            }
            return rc;
        }

        /** The raw result, for calls whose negative results the caller interprets (ENOENT, EINTR). */
        Object raw(Object... args) {
            try (Arena arena = Arena.ofConfined()) {
                return invoke(arena, null, args);
            }
        }

        /** The bound handle (for exact invocation of calls without errno capture or strings); throws if unavailable. */
        MethodHandle exact() {
            if (handle == null) {
                throw new IllegalStateException("libbpf function " + name + " is not available: " + LibBpf.loadError());
            }
            return handle;
        }

        private Object invoke(Arena arena, MemorySegment state, Object[] args) {
            MethodHandle handle = exact(); // throws if unavailable
            Object[] a = new Object[args.length + (state != null ? 1 : 0)];
            int k = 0;
            if (state != null) {
                a[k++] = state;
            }
            for (Object o : args) {
                a[k++] = o instanceof String s ? arena.allocateFrom(s) : o;
            }
            try {
                return handle.invokeWithArguments(a);
            } catch (RuntimeException | Error e) {
                throw e;
            } catch (Throwable t) {
                throw new IllegalStateException("libbpf downcall " + name + " failed", t);
            }
        }

        BpfException failure(String what, int errno) {
            String log = LibBpfLog.INSTANCE.drainThisThread();
            return new BpfException(name + "(" + what + ") failed: " + Errno.describe(errno)
                    + (log.isEmpty() ? "" : "; libbpf said:\n  " + log), errno);
        }
    }

    private static Fn fn(String name, FunctionDescriptor fd, boolean captureErrno) {
        MethodHandle h = null;
        if (LIB != null) {
            var sym = LIB.find(name);
            if (sym.isEmpty()) {
                MISSING.add(name);
            } else {
                h = captureErrno ? LINKER.downcallHandle(sym.get(), fd, ERRNO) : LINKER.downcallHandle(sym.get(), fd);
            }
        }
        return new Fn(name, h, captureErrno);
    }

    private static FunctionDescriptor ptr(java.lang.foreign.MemoryLayout... args) {
        return FunctionDescriptor.of(ADDRESS, args);
    }

    private static FunctionDescriptor i32(java.lang.foreign.MemoryLayout... args) {
        return FunctionDescriptor.of(JAVA_INT, args);
    }

    // objects and programs
    static final Fn OBJECT_OPEN_MEM = fn("bpf_object__open_mem", ptr(ADDRESS, JAVA_LONG, ADDRESS), true);
    static final Fn OBJECT_LOAD = fn("bpf_object__load", i32(ADDRESS), false);
    static final Fn OBJECT_CLOSE = fn("bpf_object__close", FunctionDescriptor.ofVoid(ADDRESS), false);
    static final Fn OBJECT_BTF = fn("bpf_object__btf", ptr(ADDRESS), false);
    static final Fn FIND_PROGRAM = fn("bpf_object__find_program_by_name", ptr(ADDRESS, ADDRESS), true);
    static final Fn FIND_MAP = fn("bpf_object__find_map_by_name", ptr(ADDRESS, ADDRESS), true);
    static final Fn PROGRAM_FD = fn("bpf_program__fd", i32(ADDRESS), false);
    static final Fn PROGRAM_SET_AUTOLOAD = fn("bpf_program__set_autoload", i32(ADDRESS, JAVA_BOOLEAN), false);
    // maps (object level)
    static final Fn MAP_FD = fn("bpf_map__fd", i32(ADDRESS), false);
    static final Fn MAP_SET_MAX_ENTRIES = fn("bpf_map__set_max_entries", i32(ADDRESS, JAVA_INT), false);
    static final Fn MAP_MAX_ENTRIES = fn("bpf_map__max_entries", i32(ADDRESS), false);
    static final Fn MAP_KEY_SIZE = fn("bpf_map__key_size", i32(ADDRESS), false);
    static final Fn MAP_VALUE_SIZE = fn("bpf_map__value_size", i32(ADDRESS), false);
    static final Fn MAP_TYPE = fn("bpf_map__type", i32(ADDRESS), false);
    static final Fn MAP_SET_INITIAL_VALUE = fn("bpf_map__set_initial_value", i32(ADDRESS, ADDRESS, JAVA_LONG), false);
    static final Fn OBJECT_NEXT_MAP = fn("bpf_object__next_map", ptr(ADDRESS, ADDRESS), false);
    static final Fn MAP_NAME = fn("bpf_map__name", ptr(ADDRESS), false);
    static final Fn MAP_REUSE_FD = fn("bpf_map__reuse_fd", i32(ADDRESS, JAVA_INT), false);
    // maps (fd level)
    static final Fn MAP_UPDATE_ELEM = fn("bpf_map_update_elem", i32(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG), false);
    static final Fn MAP_LOOKUP_ELEM = fn("bpf_map_lookup_elem", i32(JAVA_INT, ADDRESS, ADDRESS), false);
    static final Fn MAP_DELETE_ELEM = fn("bpf_map_delete_elem", i32(JAVA_INT, ADDRESS), false);
    static final Fn MAP_GET_NEXT_KEY = fn("bpf_map_get_next_key", i32(JAVA_INT, ADDRESS, ADDRESS), false);
    static final Fn MAP_LOOKUP_BATCH = fn("bpf_map_lookup_batch",
            i32(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, ADDRESS, ADDRESS, ADDRESS), false);
    static final Fn MAP_UPDATE_BATCH = fn("bpf_map_update_batch", i32(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, ADDRESS), false);
    static final Fn MAP_DELETE_BATCH = fn("bpf_map_delete_batch", i32(JAVA_INT, ADDRESS, ADDRESS, ADDRESS), false);
    // links
    static final Fn ATTACH_PERF_EVENT = fn("bpf_program__attach_perf_event", ptr(ADDRESS, JAVA_INT), true);
    static final Fn ATTACH_UPROBE_OPTS = fn("bpf_program__attach_uprobe_opts",
            ptr(ADDRESS, JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS), true);
    static final Fn ATTACH_RAW_TRACEPOINT = fn("bpf_program__attach_raw_tracepoint", ptr(ADDRESS, ADDRESS), true);
    static final Fn LINK_DESTROY = fn("bpf_link__destroy", i32(ADDRESS), false);
    // ring buffers
    static final Fn RING_BUFFER_NEW = fn("ring_buffer__new", ptr(JAVA_INT, ADDRESS, ADDRESS, ADDRESS), true);
    static final Fn RING_BUFFER_POLL = fn("ring_buffer__poll", i32(ADDRESS, JAVA_INT), false);
    static final Fn RING_BUFFER_CONSUME = fn("ring_buffer__consume", i32(ADDRESS), false);
    static final Fn RING_BUFFER_FREE = fn("ring_buffer__free", FunctionDescriptor.ofVoid(ADDRESS), false);
    // BTF
    static final Fn BTF_FIND_BY_NAME_KIND = fn("btf__find_by_name_kind", i32(ADDRESS, ADDRESS, JAVA_INT), false);
    static final Fn BTF_TYPE_BY_ID = fn("btf__type_by_id", ptr(ADDRESS, JAVA_INT), false);
    static final Fn BTF_NAME_BY_OFFSET = fn("btf__name_by_offset", ptr(ADDRESS, JAVA_INT), false);
    static final Fn BTF_RESOLVE_SIZE = fn("btf__resolve_size", FunctionDescriptor.of(JAVA_LONG, ADDRESS, JAVA_INT), false);
    static final Fn BTF_LOAD_VMLINUX = fn("btf__load_vmlinux_btf", ptr(), true);
    static final Fn BTF_FREE = fn("btf__free", FunctionDescriptor.ofVoid(ADDRESS), false);
    // misc
    static final Fn NUM_POSSIBLE_CPUS = fn("libbpf_num_possible_cpus", i32(), false);
    static final Fn OBJ_GET_INFO_BY_FD = fn("bpf_obj_get_info_by_fd", i32(JAVA_INT, ADDRESS, ADDRESS), false);
    static final Fn PROBE_MAP_TYPE = fn("libbpf_probe_bpf_map_type", i32(JAVA_INT, ADDRESS), false);
    static final Fn PROBE_PROG_TYPE = fn("libbpf_probe_bpf_prog_type", i32(JAVA_INT, ADDRESS), false);
    static final Fn PROBE_HELPER = fn("libbpf_probe_bpf_helper", i32(JAVA_INT, JAVA_INT, ADDRESS), false);
    static final Fn SET_PRINT = fn("libbpf_set_print", ptr(ADDRESS), false);
    static final Fn ENABLE_STATS = fn("bpf_enable_stats", i32(JAVA_INT), false);
    /** enum bpf_stats_type: run time and count in bpf_prog_info. */
    static final int BPF_STATS_RUN_TIME = 0;

    /** ring_buffer_sample_fn: int (*)(void *ctx, void *data, size_t size). */
    static final FunctionDescriptor RING_BUFFER_SAMPLE_FN = FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG);

    static {
        if (LIB != null && MISSING.isEmpty()) {
            LibBpfLog.INSTANCE.install(SET_PRINT);
        }
    }

    private LibBpf() {}

    /** Null when libbpf.so.1 loads and has every function we bind; otherwise one line saying why not. */
    static String loadError() {
        if (LOAD_ERROR != null) {
            return LOAD_ERROR;
        }
        if (!MISSING.isEmpty()) {
            return "libbpf too old: libbpf.so.1 has no " + MISSING.get(0) + " (need libbpf >= 1.0)";
        }
        return null;
    }

    /**
     * {@code ring_buffer__poll} and {@code ring_buffer__consume} run on every poll of the sampling loop, so
     * they are invoked exactly: {@link Fn#raw} spreads an argument array through invokeWithArguments and
     * opens an arena per call, which in C1-compiled code cost more than the call itself.
     */
    static int ringBufferPoll(MemorySegment rb, int timeoutMs) {
        try {
            return (int) RING_BUFFER_POLL.exact().invokeExact(rb, timeoutMs);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("libbpf downcall ring_buffer__poll failed", t);
        }
    }

    static int ringBufferConsume(MemorySegment rb) {
        try {
            return (int) RING_BUFFER_CONSUME.exact().invokeExact(rb);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("libbpf downcall ring_buffer__consume failed", t);
        }
    }

    static int numPossibleCpus() throws BpfException {
        return NUM_POSSIBLE_CPUS.status("");
    }

    /** Fills {@code info} (a struct bpf_prog_info / bpf_map_info buffer) for {@code fd}. */
    static void objGetInfoByFd(int fd, MemorySegment info) throws BpfException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment len = arena.allocateFrom(JAVA_INT, (int) info.byteSize());
            OBJ_GET_INFO_BY_FD.status("fd " + fd, fd, info, len);
        }
    }
}
