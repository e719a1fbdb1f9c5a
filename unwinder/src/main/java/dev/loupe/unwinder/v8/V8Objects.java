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

    /** What names a frame: its function and script. {@code script} null when the function has none (or not readable). */
    record Shared(String name, String script, long bytes) {}

    private final ProcessMemory mem;
    private final V8Layout l;

    V8Objects(ProcessMemory mem, V8Layout layout) {
        this.mem = mem;
        this.l = layout;
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
        }
        return new Shared(name, script, 64 + 2L * (name.length() + (script == null ? 0 : script.length())));
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
        append(out, s, 0, Integer.MAX_VALUE, 0);
        return out.toString();
    }

    /** Appends characters [from, from + count) of the string at {@code s} (count clipped to its length). */
    private void append(StringBuilder out, long s, int from, int count, int depth) throws IOException, NotObject {
        if (depth > MAX_DEPTH) {
            throw new NotObject("string nested deeper than " + MAX_DEPTH);
        }
        int t = type(s);
        if (t >= l.i(Field.FIRST_NONSTRING_TYPE)) {
            throw new NotObject("type " + t + " is not a string");
        }
        int length = (int) readInt(untag(s) + l.i(Field.STRING_LENGTH));
        if (length < 0 || length > MAX_STRING) {
            throw new NotObject("string of length " + length);
        }
        if (from < 0 || from > length) {
            throw new NotObject("slice from " + from + " of a string of length " + length);
        }
        int n = Math.min(count, length - from);
        if (out.length() + n > MAX_STRING) {
            throw new NotObject("string longer than " + MAX_STRING);
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
                append(out, first, from, k, depth + 1);
                if (n > k) {
                    append(out, second, 0, n - k, depth + 1);
                }
            } else {
                append(out, second, from - firstLength, n, depth + 1);
            }
        } else if (representation == l.i(Field.THIN_STRING_TAG)) {
            append(out, word(s, l.i(Field.THIN_ACTUAL)), from, n, depth + 1);
        } else if (representation == l.i(Field.SLICED_STRING_TAG)) {
            long offset = word(s, l.i(Field.SLICED_OFFSET));
            if (!l.isSmi(offset) || l.smi(offset) < 0 || l.smi(offset) > Integer.MAX_VALUE - MAX_STRING) {
                throw new NotObject("sliced string's offset 0x" + Long.toHexString(offset));
            }
            append(out, word(s, l.i(Field.SLICED_PARENT)), (int) l.smi(offset) + from, n, depth + 1);
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
