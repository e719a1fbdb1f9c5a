package dev.loupe.unwinder.python;

import dev.loupe.unwinder.proc.ProcessGoneException;
import dev.loupe.unwinder.proc.ProcessMemory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * Reads code objects out of a CPython process: its qualified name, file, first line and line table. A pointer that is
 * not a code object (freed and reused, a layout that is not this version's) is caught by the object's type, which must
 * be the process's {@code PyCode_Type}; strings and tables past {@link #MAX_STRING} / {@link #MAX_LINE_TABLE} bytes,
 * or not the compact kind this reads, are refused rather than truncated.
 */
final class CodeObjects {
    static final int MAX_STRING = 4096;
    static final int MAX_LINE_TABLE = 1 << 20;
    private static final int STATE_OFFSET = 32; // PyASCIIObject.state, after refcount, type, length and hash

    /** What a frame of a code object needs: its names, first line and line table. */
    record Code(String qualname, String filename, int firstLine, byte[] lineTable) {
        long bytes() {
            return 64 + 2L * (qualname.length() + filename.length()) + lineTable.length;
        }
    }

    /** The code object is not one (its type, or a field that makes no sense): a frame that cannot be named. */
    static final class NotCode extends Exception {
        NotCode(String what) {
            super(what, null, false, false);
        }
    }

    private final ProcessMemory mem;
    private final PythonLayout.CodeLayout layout;
    private final long codeType;

    CodeObjects(ProcessMemory mem, PythonLayout.CodeLayout layout, long codeType) {
        this.mem = mem;
        this.layout = layout;
        this.codeType = codeType;
    }

    Code read(long address) throws IOException, NotCode {
        ByteBuffer co;
        try {
            co = mem.read(address, layout.span());
        } catch (ProcessGoneException e) {
            throw e;
        } catch (IOException e) {
            throw new NotCode("unreadable at 0x" + Long.toHexString(address));
        }
        if (co.getLong(8) != codeType) {
            throw new NotCode("type 0x" + Long.toHexString(co.getLong(8)) + " is not PyCode_Type");
        }
        int firstLine = co.getInt(layout.firstLineNo());
        if (firstLine < 0) {
            throw new NotCode("first line " + firstLine);
        }
        String filename = string(co.getLong(layout.filename()));
        String qualname = string(co.getLong(layout.qualname() >= 0 ? layout.qualname() : layout.name()));
        byte[] table = bytes(co.getLong(layout.lineTable()));
        return new Code(qualname, filename, firstLine, table);
    }

    /** A str object's text: compact ASCII or compact UCS-1/2/4 (what the compiler makes of names and file names). */
    private String string(long address) throws IOException, NotCode {
        ByteBuffer h = object(address, layout.compactData());
        long length = h.getLong(16);
        int state = h.getInt(STATE_OFFSET);
        int kind = (state >>> 2) & 7;
        boolean compact = (state >>> 5 & 1) != 0;
        boolean ascii = (state >>> 6 & 1) != 0;
        if (!compact || length < 0 || length > MAX_STRING || (kind != 1 && kind != 2 && kind != 4)) {
            throw new NotCode("str at 0x" + Long.toHexString(address) + ": state 0x" + Integer.toHexString(state)
                    + ", length " + length);
        }
        if (ascii && kind != 1) {
            throw new NotCode("ASCII str of kind " + kind);
        }
        int n = (int) length * kind;
        ByteBuffer data = read(address + (ascii ? layout.asciiData() : layout.compactData()), n);
        byte[] b = new byte[n];
        data.get(b);
        return switch (kind) {
            case 1 -> new String(b, ascii ? StandardCharsets.US_ASCII : StandardCharsets.ISO_8859_1);
            case 2 -> new String(b, StandardCharsets.UTF_16LE);
            default -> new String(b, java.nio.charset.Charset.forName("UTF-32LE"));
        };
    }

    private byte[] bytes(long address) throws IOException, NotCode {
        ByteBuffer h = object(address, layout.bytesData());
        long size = h.getLong(layout.bytesSize());
        if (size < 0 || size > MAX_LINE_TABLE) {
            throw new NotCode("line table of " + size + " bytes");
        }
        byte[] b = new byte[(int) size];
        read(address + layout.bytesData(), (int) size).get(b);
        return b;
    }

    private ByteBuffer object(long address, int length) throws IOException, NotCode {
        if (address <= 0 || address >= 1L << 47 || (address & 7) != 0) {
            throw new NotCode("object pointer 0x" + Long.toHexString(address));
        }
        return read(address, length);
    }

    private ByteBuffer read(long address, int length) throws IOException, NotCode {
        try {
            return mem.read(address, length);
        } catch (ProcessGoneException e) {
            throw e;
        } catch (IOException e) {
            throw new NotCode("unreadable at 0x" + Long.toHexString(address));
        }
    }
}
