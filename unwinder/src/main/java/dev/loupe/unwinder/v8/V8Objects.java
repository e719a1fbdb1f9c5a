package dev.loupe.unwinder.v8;

import dev.loupe.unwinder.proc.ProcessGoneException;
import dev.loupe.unwinder.proc.ProcessMemory;
import dev.loupe.unwinder.v8.V8Layout.Field;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * Reads the objects a JavaScript frame is named from out of a V8 process: a SharedFunctionInfo's function name (a
 * string, or its ScopeInfo's) and its Script's name. Every object's map is read and its instance type checked before
 * a field of it is trusted; a pointer that is no such object (moved by the GC, reused, a layout that is not this
 * build's) is {@link NotObject}, never read as another. Strings: sequential one- and two-byte, cons, thin and sliced,
 * at most {@link #MAX_STRING} characters and {@link #MAX_DEPTH} levels of cons/thin/sliced.
 */
final class V8Objects {
    static final int MAX_STRING = 4096;
    static final int MAX_DEPTH = 16;
    /** ScopeInfo slots searched for the function's name after the context locals (its place varies by version). */
    static final int SCOPE_INFO_SLOTS = 16;
    static final String ANONYMOUS = "(anonymous)";

    /** The pointer is not the object it should be: a frame that cannot be named. */
    static final class NotObject extends Exception {
        NotObject(String what) {
            super(what, null, false, false);
        }
    }

    /**
     * What names a frame: its function and script, and what gives its lines: its bytecode's source position table and
     * its script's line ends ({@link LineEnds}). {@code script} null when the function has none (or not readable);
     * {@code positions} and {@code lineEnds} null when not read (no bytecode, no table yet, a source this does not read).
     */
    record Shared(String name, String script, V8Positions positions, LineEnds lineEnds, long bytes) {
        Shared(String name, String script, long bytes) {
            this(name, script, null, null, bytes);
        }

        /** The line (1-based) of bytecode offset {@code offset}, 0 when unknown. */
        int line(int offset) {
            if (positions == null || lineEnds == null || offset < 0) {
                return 0;
            }
            return lineEnds.line(positions.scriptOffset(offset));
        }
    }

    /**
     * A script's line ends as V8 computes them ({@code String::CalculateLineEnds}): the offset of each line terminator
     * (LF, CR not before LF, U+2028, U+2029), then the source's length.
     */
    record LineEnds(int[] ends) {
        static LineEnds of(CharSequence source) {
            int[] out = new int[16];
            int n = 0;
            for (int i = 0; i <= source.length(); i++) {
                boolean end = i == source.length();
                if (!end) {
                    char c = source.charAt(i);
                    end = c == '\n' || c == '\u2028' || c == '\u2029'
                            || (c == '\r' && (i + 1 == source.length() || source.charAt(i + 1) != '\n'));
                }
                if (end) {
                    if (n == out.length) {
                        out = java.util.Arrays.copyOf(out, 2 * n);
                    }
                    out[n++] = i;
                }
            }
            return new LineEnds(java.util.Arrays.copyOf(out, n));
        }

        /** The line (1-based) of script offset {@code position}, 0 when it is outside the source. */
        int line(int position) {
            if (position < 0 || ends.length == 0 || position > ends[ends.length - 1]) {
                return 0;
            }
            int i = java.util.Arrays.binarySearch(ends, position);
            return (i >= 0 ? i : -i - 1) + 1;
        }

        long bytes() {
            return 32 + 4L * ends.length;
        }
    }

    /** Characters of a script's source read at most for its line ends. */
    static final int MAX_SOURCE = 8 << 20;
    /** Scripts whose line ends are kept (by their source string's address, checked by its length). */
    static final int SCRIPTS = 64;
    /** Bytes of a source position table read at most. */
    static final int MAX_TABLE = 1 << 20;

    private final java.util.Map<Long, LineEnds> scripts = new java.util.LinkedHashMap<>(SCRIPTS, 0.75f, true);

    private final ProcessMemory mem;
    private final V8Layout l;

    V8Objects(ProcessMemory mem, V8Layout layout) {
        this.mem = mem;
        this.l = layout;
    }

    /** The bytecode offset of a frame's raw offset slot value (offset into the BytecodeArray object), -1 if none. */
    int bytecodeOffset(int raw) {
        if (raw < 0 || !l.has(Field.BYTECODE_DATA)) {
            return -1;
        }
        int offset = raw - (l.i(Field.BYTECODE_DATA) - l.i(Field.HEAP_OBJECT_TAG));
        return offset >= 0 ? offset : -1;
    }

    /** The SharedFunctionInfo at untagged {@code address}. */
    Shared shared(long address) throws IOException, NotObject {
        long sfi = address | 1;
        if (type(sfi) != l.i(Field.SFI_TYPE)) {
            throw new NotObject("0x" + Long.toHexString(address) + " is not a SharedFunctionInfo");
        }
        long nameOrScope = word(sfi, l.i(Field.SFI_NAME_OR_SCOPE_INFO));
        String name = null;
        if (l.isHeapObject(nameOrScope)) {
            int t = type(nameOrScope);
            if (t < l.i(Field.FIRST_NONSTRING_TYPE)) {
                name = string(nameOrScope);
            } else if (t == l.i(Field.SCOPE_INFO_TYPE)) {
                name = scopeInfoName(nameOrScope);
            }
        }
        if (name == null || name.isEmpty()) {
            name = ANONYMOUS;
        }
        String script = null;
        V8Positions positions = null;
        LineEnds lineEnds = null;
        long scriptOrDebug = word(sfi, l.i(Field.SFI_SCRIPT_OR_DEBUG_INFO));
        if (l.isHeapObject(scriptOrDebug) && type(scriptOrDebug) == l.i(Field.SCRIPT_TYPE)) {
            long scriptName = word(scriptOrDebug, l.i(Field.SCRIPT_NAME));
            if (l.isHeapObject(scriptName) && type(scriptName) < l.i(Field.FIRST_NONSTRING_TYPE)) {
                try {
                    script = string(scriptName);
                } catch (NotObject e) {
                    script = null; // an external or odd name: the function is still known
                }
            }
            if (l.hasLines()) {
                try {
                    positions = positions(sfi);
                    lineEnds = positions == null ? null : lineEnds(scriptOrDebug);
                } catch (NotObject e) {
                    positions = null; // no line, the function is still known
                }
            }
        }
        return new Shared(name, script, positions, lineEnds,
                64 + 2L * (name.length() + (script == null ? 0 : script.length())) + (positions == null ? 0 : positions.bytes()));
    }

    /**
     * The source position table of the SharedFunctionInfo's bytecode: its function data is the BytecodeArray (or, when
     * baseline code exists and the layout says where that keeps it, the Code holding it); null when there is none
     * (not compiled, flushed, or its positions not collected yet: V8 collects them lazily).
     */
    private V8Positions positions(long sfi) throws IOException, NotObject {
        long data = word(sfi, l.i(Field.SFI_FUNCTION_DATA));
        if (!l.isHeapObject(data)) {
            return null;
        }
        int t = type(data);
        if (t != l.i(Field.BYTECODE_ARRAY_TYPE) && l.has(Field.CODE_TYPE) && l.has(Field.CODE_BYTECODE) && t == l.i(Field.CODE_TYPE)) {
            data = word(data, l.i(Field.CODE_BYTECODE));
            t = l.isHeapObject(data) ? type(data) : -1;
        }
        if (t != l.i(Field.BYTECODE_ARRAY_TYPE)) {
            return null;
        }
        long table = word(data, l.i(Field.BYTECODE_SOURCE_POSITIONS));
        if (!l.isHeapObject(table)) {
            return null;
        }
        int tt = type(table);
        if (tt != l.i(Field.BYTE_ARRAY_TYPE) && !(l.has(Field.TRUSTED_BYTE_ARRAY_TYPE) && tt == l.i(Field.TRUSTED_BYTE_ARRAY_TYPE))) {
            return null; // undefined: not collected yet
        }
        long length = word(table, l.i(Field.FIXED_ARRAY_LENGTH));
        if (!l.isSmi(length) || l.smi(length) < 0 || l.smi(length) > MAX_TABLE) {
            throw new NotObject("source position table of length 0x" + Long.toHexString(length));
        }
        int n = (int) l.smi(length);
        // a ByteArray's bytes follow its map and length
        ByteBuffer b = read(untag(table) + l.i(Field.FIXED_ARRAY_LENGTH) + 8, Math.max(n, 1));
        return V8Positions.decode(java.util.Arrays.copyOfRange(b.array(), b.arrayOffset(), b.arrayOffset() + n), n);
    }

    /** The line ends of the Script at tagged {@code script}, from its source (kept per script); null when unreadable. */
    private LineEnds lineEnds(long script) throws IOException, NotObject {
        long source = word(script, l.i(Field.SCRIPT_SOURCE));
        if (!l.isHeapObject(source) || type(source) >= l.i(Field.FIRST_NONSTRING_TYPE)) {
            return null;
        }
        LineEnds known = scripts.get(source);
        if (known != null && known.ends()[known.ends().length - 1] == length(source)) {
            return known; // the same string object (a moved one whose place another took is read again)
        }
        StringBuilder text = new StringBuilder();
        append(text, source, 0, Integer.MAX_VALUE, 0, MAX_SOURCE);
        LineEnds ends = LineEnds.of(text);
        scripts.put(source, ends);
        if (scripts.size() > SCRIPTS) {
            scripts.remove(scripts.keySet().iterator().next());
        }
        return ends;
    }

    /**
     * The function name a ScopeInfo holds: after its fixed slots and its context locals (name and info each), the first
     * non-empty string among the next {@link #SCOPE_INFO_SLOTS} slots: the function variable's name, or when that is
     * empty (an anonymous function expression) the name V8 inferred for it ({@code Module._compile}), which follows it,
     * as V8's own {@code DebugName} chooses; null when none is found.
     */
    private String scopeInfoName(long scopeInfo) throws IOException, NotObject {
        int first = l.i(Field.SCOPE_INFO_FIRST_VARS);
        long locals = word(scopeInfo, 8 + 8 * l.i(Field.SCOPE_INFO_CONTEXT_LOCALS));
        if (!l.isSmi(locals) || l.smi(locals) < 0 || l.smi(locals) > 64) {
            return null;
        }
        int from = first + 2 * (int) l.smi(locals);
        ByteBuffer slots = read(untag(scopeInfo) + 8 + 8L * from, 8 * SCOPE_INFO_SLOTS);
        for (int i = 0; i < SCOPE_INFO_SLOTS; i++) {
            long w = slots.getLong(8 * i);
            int type;
            try {
                type = l.isHeapObject(w) ? type(w) : Integer.MAX_VALUE;
            } catch (NotObject pastTheEnd) {
                return null; // no object: past the ScopeInfo's end (a script's top level has no name), so no name in it
            }
            if (type < l.i(Field.FIRST_NONSTRING_TYPE)) {
                String s = string(w);
                if (!s.isEmpty()) {
                    return s; // the function's own name, else (empty) its inferred name, which follows
                }
            }
        }
        return null;
    }

    /** The text of the string object at tagged {@code s}. */
    String string(long s) throws IOException, NotObject {
        StringBuilder out = new StringBuilder();
        append(out, s, 0, Integer.MAX_VALUE, 0, MAX_STRING);
        return out.toString();
    }

    /** Appends characters [from, from + count) of the string at {@code s} (count clipped to its length). */
    private void append(StringBuilder out, long s, int from, int count, int depth, int max) throws IOException, NotObject {
        if (depth > MAX_DEPTH) {
            throw new NotObject("string nested deeper than " + MAX_DEPTH);
        }
        int t = type(s);
        if (t >= l.i(Field.FIRST_NONSTRING_TYPE)) {
            throw new NotObject("type " + t + " is not a string");
        }
        int length = (int) readInt(untag(s) + l.i(Field.STRING_LENGTH));
        if (length < 0 || length > max) {
            throw new NotObject("string of length " + length);
        }
        if (from < 0 || from > length) {
            throw new NotObject("slice from " + from + " of a string of length " + length);
        }
        int n = Math.min(count, length - from);
        if (out.length() + n > max) {
            throw new NotObject("string longer than " + max);
        }
        int representation = t & l.i(Field.STRING_REPRESENTATION_MASK);
        boolean oneByte = (t & l.i(Field.STRING_ENCODING_MASK)) == l.i(Field.ONE_BYTE_STRING_TAG);
        if (representation == l.i(Field.SEQ_STRING_TAG)) {
            if (n == 0) {
                return;
            }
            if (oneByte) {
                ByteBuffer b = read(untag(s) + l.i(Field.SEQ_ONE_BYTE_CHARS) + from, n);
                out.append(new String(b.array(), b.arrayOffset(), n, StandardCharsets.ISO_8859_1));
            } else {
                ByteBuffer b = read(untag(s) + l.i(Field.SEQ_TWO_BYTE_CHARS) + 2L * from, 2 * n);
                out.append(new String(b.array(), b.arrayOffset(), 2 * n, StandardCharsets.UTF_16LE));
            }
        } else if (representation == l.i(Field.CONS_STRING_TAG)) {
            long first = word(s, l.i(Field.CONS_FIRST));
            long second = word(s, l.i(Field.CONS_SECOND));
            int firstLength = length(first);
            if (from < firstLength) {
                int k = Math.min(n, firstLength - from);
                append(out, first, from, k, depth + 1, max);
                if (n > k) {
                    append(out, second, 0, n - k, depth + 1, max);
                }
            } else {
                append(out, second, from - firstLength, n, depth + 1, max);
            }
        } else if (representation == l.i(Field.THIN_STRING_TAG)) {
            append(out, word(s, l.i(Field.THIN_ACTUAL)), from, n, depth + 1, max);
        } else if (representation == l.i(Field.SLICED_STRING_TAG)) {
            long offset = word(s, l.i(Field.SLICED_OFFSET));
            if (!l.isSmi(offset) || l.smi(offset) < 0 || l.smi(offset) > Integer.MAX_VALUE - MAX_STRING) {
                throw new NotObject("sliced string's offset 0x" + Long.toHexString(offset));
            }
            append(out, word(s, l.i(Field.SLICED_PARENT)), (int) l.smi(offset) + from, n, depth + 1, max);
        } else {
            throw new NotObject("string representation " + representation + " (external) not read");
        }
    }

    private int length(long s) throws IOException, NotObject {
        if (!l.isHeapObject(s) || type(s) >= l.i(Field.FIRST_NONSTRING_TYPE)) {
            throw new NotObject("a cons string's part is not a string");
        }
        int length = (int) readInt(untag(s) + l.i(Field.STRING_LENGTH));
        if (length < 0) {
            throw new NotObject("string of length " + length);
        }
        return length;
    }

    /** The instance type of the heap object at tagged {@code object}, through its map (itself a heap object). */
    int type(long object) throws IOException, NotObject {
        if (!l.isHeapObject(object)) {
            throw new NotObject("0x" + Long.toHexString(object) + " is not a heap object");
        }
        long map = word(object, l.i(Field.OBJECT_MAP));
        if (!l.isHeapObject(map)) {
            throw new NotObject("map 0x" + Long.toHexString(map) + " of 0x" + Long.toHexString(object));
        }
        ByteBuffer b = read(untag(map) + l.i(Field.MAP_INSTANCE_TYPE), 2);
        return Short.toUnsignedInt(b.getShort(0));
    }

    /** The 8-byte field at {@code offset} of the heap object at tagged {@code object}. */
    private long word(long object, int offset) throws IOException, NotObject {
        return read(untag(object) + offset, 8).getLong(0);
    }

    private long readInt(long address) throws IOException, NotObject {
        return read(address, 4).getInt(0);
    }

    private static long untag(long tagged) {
        return tagged & ~3L;
    }

    private ByteBuffer read(long address, int length) throws IOException, NotObject {
        if (address <= 0 || address >= 1L << 47) {
            throw new NotObject("address 0x" + Long.toHexString(address));
        }
        try {
            return mem.read(address, length);
        } catch (ProcessGoneException e) {
            throw e;
        } catch (IOException e) {
            throw new NotObject("unreadable at 0x" + Long.toHexString(address));
        }
    }
}
