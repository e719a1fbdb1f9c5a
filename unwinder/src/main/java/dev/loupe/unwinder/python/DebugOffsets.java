package dev.loupe.unwinder.python;

import dev.loupe.unwinder.proc.ProcessMemory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

/**
 * CPython 3.13 and later publish their own layout for out-of-process readers at the start of {@code _PyRuntime}:
 * {@code _Py_DebugOffsets} (3.13: {@code Include/internal/pycore_runtime.h}; 3.14: {@code pycore_debug_offsets.h}),
 * a cookie {@code "xdebugpy"}, {@code PY_VERSION_HEX}, {@code free_threaded}, then sections of u64 field offsets, each
 * led by its struct's size. The sections' fields differ between minor versions (3.14 adds some), so where each offset
 * sits is per minor version ({@link #FIELDS}, from the headers); the offsets themselves are the process's own.
 */
final class DebugOffsets {
    static final byte[] COOKIE = "xdebugpy".getBytes(StandardCharsets.US_ASCII);

    /** The fields of each section in order (after cookie, version, free_threaded), per minor version. */
    static final Map<Integer, List<List<String>>> FIELDS = Map.of(
            13, List.of(
                    List.of("runtime_state", "size", "finalizing", "interpreters_head"),
                    List.of("interpreter_state", "size", "id", "next", "threads_head", "gc", "imports_modules", "sysdict",
                            "builtins", "ceval_gil", "gil_runtime_state", "gil_runtime_state_enabled",
                            "gil_runtime_state_locked", "gil_runtime_state_holder"),
                    List.of("thread_state", "size", "prev", "next", "interp", "current_frame", "thread_id", "native_thread_id",
                            "datastack_chunk", "status"),
                    List.of("interpreter_frame", "size", "previous", "executable", "instr_ptr", "localsplus", "owner"),
                    List.of("code_object", "size", "filename", "name", "qualname", "linetable", "firstlineno", "argcount",
                            "localsplusnames", "localspluskinds", "co_code_adaptive"),
                    List.of("pyobject", "size", "ob_type"),
                    List.of("type_object", "size", "tp_name", "tp_repr", "tp_flags"),
                    List.of("tuple_object", "size", "ob_item", "ob_size"),
                    List.of("list_object", "size", "ob_item", "ob_size"),
                    List.of("dict_object", "size", "ma_keys", "ma_values"),
                    List.of("float_object", "size", "ob_fval"),
                    List.of("long_object", "size", "lv_tag", "ob_digit"),
                    List.of("bytes_object", "size", "ob_size", "ob_sval"),
                    List.of("unicode_object", "size", "state", "length", "asciiobject_size")),
            14, List.of(
                    List.of("runtime_state", "size", "finalizing", "interpreters_head"),
                    List.of("interpreter_state", "size", "id", "next", "threads_head", "threads_main", "gc", "imports_modules",
                            "sysdict", "builtins", "ceval_gil", "gil_runtime_state", "gil_runtime_state_enabled",
                            "gil_runtime_state_locked", "gil_runtime_state_holder", "code_object_generation",
                            "tlbc_generation"),
                    List.of("thread_state", "size", "prev", "next", "interp", "current_frame", "thread_id", "native_thread_id",
                            "datastack_chunk", "status"),
                    List.of("interpreter_frame", "size", "previous", "executable", "instr_ptr", "localsplus", "owner",
                            "stackpointer", "tlbc_index"),
                    List.of("code_object", "size", "filename", "name", "qualname", "linetable", "firstlineno", "argcount",
                            "localsplusnames", "localspluskinds", "co_code_adaptive", "co_tlbc"),
                    List.of("pyobject", "size", "ob_type"),
                    List.of("type_object", "size", "tp_name", "tp_repr", "tp_flags"),
                    List.of("tuple_object", "size", "ob_item", "ob_size"),
                    List.of("list_object", "size", "ob_item", "ob_size"),
                    List.of("set_object", "size", "used", "table", "mask"),
                    List.of("dict_object", "size", "ma_keys", "ma_values"),
                    List.of("float_object", "size", "ob_fval"),
                    List.of("long_object", "size", "lv_tag", "ob_digit"),
                    List.of("bytes_object", "size", "ob_size", "ob_sval"),
                    List.of("unicode_object", "size", "state", "length", "asciiobject_size")));

    /**
     * The owner byte of the frame a {@code _PyEval_EvalFrameDefault} call keeps on the C stack as its entry: 3.13's
     * {@code FRAME_OWNED_BY_CSTACK} and 3.14's {@code FRAME_OWNED_BY_INTERPRETER} (its {@code FRAME_OWNED_BY_CSTACK},
     * 4, marks other frames of no code).
     */
    static final int ENTRY_OWNER = 3;

    private DebugOffsets() {}

    /** Index (in u64 words from the struct's start) of {@code section.field} in minor version {@code minor}'s struct. */
    static int index(int minor, String section, String field) {
        int i = 3;
        for (List<String> s : FIELDS.get(minor)) {
            int f = s.indexOf(field);
            if (s.get(0).equals(section) && f > 0) {
                return i + f - 1;
            }
            i += s.size() - 1;
        }
        throw new IllegalArgumentException(section + "." + field + " is not in 3." + minor + "'s _Py_DebugOffsets");
    }

    /** Words the struct has in minor version {@code minor}. */
    static int words(int minor) {
        return index(minor, "unicode_object", "asciiobject_size") + 1;
    }

    /**
     * Reads the layout of CPython 3.{@code minor} from its {@code _PyRuntime} at {@code runtime}.
     *
     * @throws PythonProcess.Unsupported no cookie, another version than the binary's name says, or a free-threaded build
     */
    static PythonLayout read(ProcessMemory mem, long runtime, int major, int minor) throws IOException, PythonProcess.Unsupported {
        if (!FIELDS.containsKey(minor) || major != 3) {
            throw new PythonProcess.Unsupported("CPython " + major + "." + minor + "'s _Py_DebugOffsets layout is not known");
        }
        ByteBuffer b = mem.read(runtime, 8 * words(minor));
        return parse(b, major, minor);
    }

    static PythonLayout parse(ByteBuffer b, int major, int minor) throws PythonProcess.Unsupported {
        byte[] cookie = new byte[8];
        b.get(0, cookie);
        if (!java.util.Arrays.equals(cookie, COOKIE)) {
            throw new PythonProcess.Unsupported("_PyRuntime of CPython " + major + "." + minor + " does not start with xdebugpy");
        }
        long version = b.getLong(8);
        if ((version >>> 24) != major || ((version >>> 16) & 0xff) != minor) {
            throw new PythonProcess.Unsupported("CPython " + major + "." + minor + "'s binary, but _Py_DebugOffsets says version 0x"
                    + Long.toHexString(version));
        }
        if (b.getLong(16) != 0) {
            throw new PythonProcess.Unsupported("CPython " + major + "." + minor + " is a free-threaded build");
        }
        Field f = (section, field) -> {
            long v = b.getLong(8 * index(minor, section, field));
            if (v < 0 || v > 0xffff) {
                throw new PythonProcess.Unsupported("_Py_DebugOffsets " + section + "." + field + " = " + v);
            }
            return (int) v;
        };
        int ascii = f.get("unicode_object", "asciiobject_size");
        PythonLayout.CodeLayout code = new PythonLayout.CodeLayout(f.get("code_object", "firstlineno"),
                f.get("code_object", "filename"), f.get("code_object", "name"), f.get("code_object", "qualname"),
                f.get("code_object", "linetable"), ascii, ascii + 16, f.get("bytes_object", "ob_size"),
                f.get("bytes_object", "ob_sval"));
        return new PythonLayout(major, minor, PythonLayout.Variant.V313, f.get("runtime_state", "interpreters_head"),
                f.get("interpreter_state", "threads_head"), f.get("thread_state", "next"), f.get("thread_state", "thread_id"),
                PythonLayout.NO_HOLDER, f.get("thread_state", "current_frame"), f.get("interpreter_frame", "previous"),
                f.get("interpreter_frame", "executable"), f.get("interpreter_frame", "instr_ptr"),
                f.get("interpreter_frame", "owner"), ENTRY_OWNER, f.get("code_object", "co_code_adaptive"), code);
    }

    @FunctionalInterface
    private interface Field {
        int get(String section, String field) throws PythonProcess.Unsupported;
    }
}
