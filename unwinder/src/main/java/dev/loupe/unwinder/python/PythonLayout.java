package dev.loupe.unwinder.python;

import java.util.Optional;

/**
 * Where one CPython version keeps what the walker and the namer read: the runtime's first interpreter, its thread
 * states, a thread's current interpreter frame, a frame's code object, instruction and link, and a code object's
 * names, first line and line table. Tables per minor version come from the version's own headers
 * ({@code Include/internal/pycore_*.h}, {@code Include/cpython/code.h}) and are checked by {@code PythonRuntimeTest}
 * against the running interpreter's own view where the host has that version (3.9, 3.11), by {@code TableVersionsTest}
 * on a process's memory made from the table where it has not (3.10, 3.12); 3.13 and later publish theirs in
 * {@code _PyRuntime} ({@code _Py_DebugOffsets}).
 *
 * @param variant          how frames link (loupe_abi.h's {@code enum python_variant})
 * @param interpretersHead offset in {@code _PyRuntime} of {@code interpreters.head}
 * @param threadsHead      offset in {@code PyInterpreterState} of {@code threads.head}
 * @param threadNext       offset in {@code PyThreadState} of {@code next}
 * @param threadId         offset in {@code PyThreadState} of {@code thread_id} (the thread's {@code pthread_t})
 * @param frameHolder      offset in {@code PyThreadState} of {@code cframe} (3.11, 3.12), or {@code NO_HOLDER}
 * @param currentFrame     offset of the current frame in the holder (or in the thread state)
 * @param framePrevious    {@code previous} (3.11+) or {@code f_back}
 * @param frameCode        {@code f_code} / {@code f_executable}
 * @param frameInstr       {@code prev_instr} / {@code instr_ptr} (a pointer), or {@code f_lasti} (an int, 3.9/3.10: bytes
 *                         in 3.9, code units in 3.10)
 * @param frameEnd         {@code is_entry} (3.11) or {@code owner} (3.12+): what ends one C call's frames
 * @param cstackOwner      the owner value of a C call's entry frame (3.12+)
 * @param codeAdaptive     offset of the first instruction in a code object (3.11+; {@code co_code_adaptive})
 */
public record PythonLayout(int major, int minor, Variant variant,
                           int interpretersHead, int threadsHead, int threadNext, int threadId,
                           int frameHolder, int currentFrame, int framePrevious, int frameCode, int frameInstr, int frameEnd,
                           int cstackOwner, int codeAdaptive, CodeLayout code) {
    /** loupe_abi.h's {@code PYTHON_NO_HOLDER}: the thread state holds its current frame itself. */
    public static final int NO_HOLDER = 0xffff;

    /** loupe_abi.h's {@code enum python_variant}. */
    public enum Variant {
        /** 3.9 and 3.10: one {@code PyFrameObject} per call, linked by {@code f_back}. */
        V39(1),
        V311(2),
        V312(3),
        V313(4);

        final int code;

        Variant(int code) {
            this.code = code;
        }

        public int code() {
            return code;
        }
    }

    /**
     * A code object's fields and the string and bytes objects it points to.
     *
     * @param firstLineNo   {@code co_firstlineno} (an int)
     * @param filename      {@code co_filename}
     * @param name          {@code co_name}
     * @param qualname      {@code co_qualname} (3.11+; -1 before: {@code co_name} is shown)
     * @param lineTable     {@code co_linetable} (3.10+) or {@code co_lnotab}
     * @param asciiData     where a compact ASCII str's characters start
     * @param compactData   where a compact non-ASCII str's characters start
     * @param bytesSize     a bytes object's {@code ob_size}
     * @param bytesData     a bytes object's {@code ob_sval}
     */
    public record CodeLayout(int firstLineNo, int filename, int name, int qualname, int lineTable,
                             int asciiData, int compactData, int bytesSize, int bytesData) {
        /** Bytes of the code object read at once: every field above. */
        int span() {
            return Math.max(Math.max(firstLineNo + 4, filename + 8), Math.max(Math.max(name, qualname), lineTable) + 8);
        }
    }

    /**
     * The table for CPython {@code major.minor} (3.9 to 3.12), or empty for a version without one (3.13+ read their own
     * layout: {@link DebugOffsets}).
     */
    public static Optional<PythonLayout> forVersion(int major, int minor) {
        if (major != 3) {
            return Optional.empty();
        }
        return switch (minor) {
            // 3.11 (Include/internal/pycore_runtime.h, pycore_interp.h, cpython/pystate.h, pycore_frame.h,
            // cpython/code.h, cpython/unicodeobject.h at v3.11.2): interpreters.head after five ints, the atomic
            // _finalizing and the interpreters' mutex; threads.head after next_unique_id; thread_id after async_exc;
            // cframe after the five ints of recursion/tracing state; _PyCFrame {use_tracing, current_frame};
            // _PyInterpreterFrame {f_func, f_globals, f_builtins, f_locals, f_code, frame_obj, previous, prev_instr,
            // stacktop, is_entry, owner}; PyASCIIObject 48 bytes, PyCompactUnicodeObject 72.
            // 3.9 (Include/internal/pycore_runtime.h, pycore_interp.h, cpython/pystate.h, cpython/frameobject.h,
            // cpython/code.h at v3.9.2): interpreters.head after four ints, _finalizing and the mutex; tstate_head after
            // next; frame after prev, next, interp; thread_id after the tracing state, exception state, dict,
            // gilstate_counter and async_exc; PyFrameObject {VAR_HEAD, f_back, f_code, ..., f_lasti at 104}; code
            // objects have no qualified name (co_name is shown) and a co_lnotab.
            case 9 -> Optional.of(new PythonLayout(3, 9, Variant.V39, 32, 8, 8, 176, NO_HOLDER, 24, 24, 32, 104, 0, 0, 0,
                    new CodeLayout(40, 104, 112, -1, 120, 48, 72, 16, 32)));
            // 3.10 (Include/internal/pycore_runtime.h, pycore_interp.h, cpython/pystate.h, cpython/frameobject.h,
            // cpython/code.h, cpython/unicodeobject.h at v3.10.0; laid out as py-spy's bindgen of those headers,
            // src/python_bindings/v3_10_0.rs): 3.9's runtime, interpreter and thread state offsets (3.10 added cframe
            // in the room 3.9's use_tracing had, thread_id stays at 176); PyFrameObject {VAR_HEAD, f_back, f_code,
            // f_builtins, f_globals, f_locals, f_valuestack, f_trace, f_stackdepth, two chars, f_gen, f_lasti at 96}
            // whose f_lasti counts code units, not bytes (PyFrame_GetLineNumber passes f_lasti * 2); code objects as
            // 3.9's, their co_linetable the 3.10 format of Objects/lnotab_notes.txt (LineTable.linetable310).
            case 10 -> Optional.of(new PythonLayout(3, 10, Variant.V39, 32, 8, 8, 176, NO_HOLDER, 24, 24, 32, 96, 0, 0, 0,
                    new CodeLayout(40, 104, 112, -1, 120, 48, 72, 16, 32)));
            case 11 -> Optional.of(new PythonLayout(3, 11, Variant.V311, 40, 16, 8, 152, 56, 8, 48, 32, 56, 68, 0, 184,
                    new CodeLayout(72, 112, 120, 128, 136, 48, 72, 16, 32)));
            // 3.12 (Include/internal/pycore_runtime.h, pycore_interp.h, cpython/pystate.h, pycore_frame.h,
            // cpython/code.h, cpython/unicodeobject.h at v3.12.0; laid out as py-spy's bindgen of those headers,
            // src/python_bindings/v3_12_0.rs): _PyRuntimeState {_initialized and four more ints, _finalizing,
            // interpreters {mutex, head at 40}}; PyInterpreterState {next, id, id_refcount, requires_idref, id_mutex,
            // _initialized, finalizing, monitoring_version, last_restart_version, threads {next_unique_id, head at 72}};
            // PyThreadState {prev, next, interp, _status, six ints, cframe at 56, ..., async_exc, thread_id at 136};
            // _PyCFrame {current_frame, previous}; _PyInterpreterFrame {f_code, previous, f_funcobj, f_globals,
            // f_builtins, f_locals, frame_obj, prev_instr at 56, stacktop, return_offset, owner at 70}, the C call's
            // entry frame owned by FRAME_OWNED_BY_CSTACK = 3; PyCodeObject with co_firstlineno at 68, co_filename,
            // co_name, co_qualname, co_linetable at 112..136 (3.11's location table format), co_code_adaptive at 192;
            // PyASCIIObject without wstr: 40 bytes, PyCompactUnicodeObject 56.
            case 12 -> Optional.of(new PythonLayout(3, 12, Variant.V312, 40, 72, 8, 136, 56, 0, 8, 0, 56, 70, 3, 192,
                    new CodeLayout(68, 112, 120, 128, 136, 40, 56, 16, 32)));
            default -> Optional.empty();
        };
    }

    /**
     * The words of the layout the walker reads (loupe_abi.h's {@code RULE_PYTHON_DATA}), given {@code _PyRuntime}'s
     * address in the binary's file (the walker adds the mapping's load bias).
     */
    long[] kernelWords(long runtimeAddress) {
        for (int f : new int[] {framePrevious + 8, frameCode + 8, frameInstr + 8, frameEnd + 1}) {
            if (f > PythonFrameStep.FRAME_BYTES) {
                throw new IllegalArgumentException(this + "'s frame fields lie past the " + PythonFrameStep.FRAME_BYTES
                        + " bytes the walker reads");
            }
        }
        long heads = runtimeAddress + interpretersHead;
        if (heads <= 0 || heads >= 1L << 47) {
            throw new IllegalArgumentException("_PyRuntime at 0x" + Long.toHexString(runtimeAddress) + " is not a user address");
        }
        return new long[] {
                data(heads << 8 | (long) variant.code << 56),
                data(fields(threadsHead, threadNext, threadId) | (long) cstackOwner << 56),
                data(fields(frameHolder, currentFrame, framePrevious) | 2L << 56),
                data(fields(frameCode, frameInstr, frameEnd) | 3L << 56),
                data(fields(codeAdaptive, 0, 0) | 4L << 56),
        };
    }

    private static long data(long payload) {
        return payload | dev.loupe.unwinder.ehframe.UnwindRule.KIND_PYTHON_DATA;
    }

    private static long fields(int a, int b, int c) {
        for (int v : new int[] {a, b, c}) {
            if (v < 0 || v > 0xffff) {
                throw new IllegalArgumentException("offset " + v + " does not fit 16 bits");
            }
        }
        return (long) a << 8 | (long) b << 24 | (long) c << 40;
    }

    /**
     * The line a code object's {@code table} gives instruction {@code index} (as the walker wrote it: code units, 3.9's
     * f_lasti bytes), in this version's table format; 0 when it has none.
     */
    int line(byte[] table, int firstLine, int index) {
        if (index < 0) {
            return 0;
        }
        if (major == 3 && minor == 9) {
            return LineTable.lnotab39(table, firstLine, index); // f_lasti: a byte offset
        }
        if (major == 3 && minor == 10) {
            return LineTable.linetable310(table, firstLine, 2 * index); // f_lasti: code units; the table: bytes
        }
        return LineTable.line311(table, firstLine, index);
    }

    @Override
    public String toString() {
        return "CPython " + major + "." + minor;
    }
}
