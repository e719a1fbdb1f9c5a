package dev.loupe.unwinder.python;

import dev.loupe.unwinder.fuzz.FuzzInput;
import dev.loupe.unwinder.proc.ProcessMemory;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Fuzz target for the code object reader ({@link CodeObjects}) and the line tables ({@link LineTable#line311}, and
 * the same bytes read as 3.10's and 3.9's formats: {@link LineTable#linetable310}, {@link LineTable#lnotab39}): a
 * process's memory holding one CPython 3.11 code object and the str and bytes objects it points to, every header
 * field (type, first line, each str's state and length, the table's size, any pointer) from the input, and the
 * table's bytes and the instruction index looked up. Memory outside the objects is not mapped.
 *
 * <p>The reader may refuse an object ({@link CodeObjects.NotCode}) and nothing else: any other exception is a finding.
 * So is a name or table longer than the reader's caps, and, when the input built well-formed objects (the right
 * type, compact ASCII strs, no pointer changed), any difference from what was written. The line table never throws.
 */
public final class CodeObjectFuzzTarget {
    static final long BASE = 0x7f0000010000L;
    static final long CODE_TYPE = 0x959440L;
    static final PythonLayout.CodeLayout LAYOUT = PythonLayout.forVersion(3, 11).orElseThrow().code();

    private CodeObjectFuzzTarget() {}

    public static void fuzzerTestOneInput(byte[] data) {
        FuzzInput in = new FuzzInput(data);
        int flags = in.u8();
        boolean typeOk = (flags & 1) == 0;
        int firstLine = (flags & 2) == 0 ? in.u16() : in.i32();
        StrSpec filename = StrSpec.read(in, (flags & 4) != 0);
        StrSpec qualname = StrSpec.read(in, (flags & 8) != 0);
        long tableSize = (flags & 16) != 0 ? in.i64() : -1;
        int corruptPointer = (flags & 32) != 0 ? in.intIn(0, 3) : -1;
        long corruptValue = corruptPointer >= 0 ? in.i64() : 0;
        int index = in.u16() - 2;
        byte[] table = in.rest();

        long fileAt = BASE + 256;
        long qualAt = align(fileAt + 72 + filename.bytes.length);
        long tableAt = align(qualAt + 72 + qualname.bytes.length);
        ByteBuffer mem = ByteBuffer.allocate((int) (tableAt - BASE) + LAYOUT.bytesData() + table.length).order(ByteOrder.LITTLE_ENDIAN);
        mem.putLong(8, typeOk ? CODE_TYPE : CODE_TYPE + 8);
        mem.putInt(LAYOUT.firstLineNo(), firstLine);
        long[] pointers = {fileAt, qualAt, tableAt, qualAt};
        if (corruptPointer >= 0) {
            pointers[corruptPointer] = corruptValue;
        }
        mem.putLong(LAYOUT.filename(), pointers[0]);
        mem.putLong(LAYOUT.qualname(), pointers[1]);
        mem.putLong(LAYOUT.lineTable(), pointers[2]);
        mem.putLong(LAYOUT.name(), pointers[3]);
        filename.write(mem, (int) (fileAt - BASE));
        qualname.write(mem, (int) (qualAt - BASE));
        int t = (int) (tableAt - BASE);
        mem.putLong(t + LAYOUT.bytesSize(), tableSize >= 0 ? tableSize : table.length);
        mem.put(t + LAYOUT.bytesData(), table);
        byte[] image = mem.array();

        ProcessMemory pm = new ProcessMemory() {
            @Override
            public void read(long address, ByteBuffer dst) throws IOException {
                long off = address - BASE;
                if (off < 0 || off + dst.remaining() > image.length || dst.remaining() > CodeObjects.MAX_LINE_TABLE) {
                    throw new IOException("not mapped");
                }
                dst.put(image, (int) off, dst.remaining());
            }

            @Override
            public void close() {}
        };
        CodeObjects.Code code;
        try {
            code = new CodeObjects(pm, LAYOUT, CODE_TYPE).read(BASE);
        } catch (CodeObjects.NotCode refused) {
            if (typeOk && firstLine >= 0 && filename.wellFormed && qualname.wellFormed && tableSize < 0 && corruptPointer < 0) {
                throw new IllegalStateException("well-formed objects refused: " + refused.getMessage());
            }
            return;
        } catch (IOException e) {
            throw new IllegalStateException("a read outside the objects escaped as " + e);
        }
        if (code.qualname().length() > CodeObjects.MAX_STRING || code.filename().length() > CodeObjects.MAX_STRING
                || code.lineTable().length > CodeObjects.MAX_LINE_TABLE || code.firstLine() < 0) {
            throw new IllegalStateException("past the caps: " + code);
        }
        if (filename.wellFormed && qualname.wellFormed && tableSize < 0 && corruptPointer < 0
                && !(code.filename().equals(filename.text) && code.qualname().equals(qualname.text)
                && java.util.Arrays.equals(code.lineTable(), table) && code.firstLine() == firstLine)) {
            throw new IllegalStateException("read " + code + ", wrote " + filename.text + " " + qualname.text);
        }
        LineTable.line311(code.lineTable(), code.firstLine(), index);
        LineTable.linetable310(code.lineTable(), code.firstLine(), 2 * index);
        LineTable.lnotab39(code.lineTable(), code.firstLine(), index);
    }

    private static long align(long a) {
        return (a + 15) & ~15L;
    }

    /** A str object: its state and length from the input, or (well-formed) compact ASCII of its own characters. */
    record StrSpec(boolean wellFormed, int state, long length, byte[] bytes, String text) {
        static StrSpec read(FuzzInput in, boolean odd) {
            if (odd) {
                int state = in.i32();
                long length = in.u16();
                byte[] b = in.bytes(128);
                return new StrSpec(false, state, length, b, null);
            }
            byte[] b = in.bytes(64);
            for (int i = 0; i < b.length; i++) {
                b[i] = (byte) (b[i] & 0x7f);
            }
            return new StrSpec(true, 1 << 2 | 1 << 5 | 1 << 6 | 1 << 7, b.length, b, new String(b, StandardCharsets.US_ASCII));
        }

        void write(ByteBuffer mem, int at) {
            mem.putLong(at + 16, length);
            mem.putInt(at + 32, state);
            mem.put(at + (wellFormed ? LAYOUT.asciiData() : LAYOUT.compactData()), bytes);
        }
    }

    /** Kept inputs: a well-formed object with a real 3.11 location table, and one of each odd form. */
    public static void writeSeeds(Path dir) throws IOException {
        byte[] table = {(byte) 0x80, 0, (byte) (0x80 | 14 << 3 | 1), 6, 0, 5, 9, (byte) (0x80 | 13 << 3), 3, (byte) 0xf8,
                (byte) (0x80 | 11 << 3 | 2), 4, 8, (byte) (0x80 | 2 << 3), 7};
        Files.write(dir.resolve("seed-well-formed"), seed(0, "/srv/app/aviary.py", "Aviary.tern", table, 3));
        Files.write(dir.resolve("seed-odd-strs"), seed(4 | 8, "x", "y", table, 1));
        Files.write(dir.resolve("seed-bad-type"), seed(1 | 16 | 32, "a.py", "f", table, 0));
    }

    private static byte[] seed(int flags, String file, String qual, byte[] table, int index) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write(flags);
        out.write(new byte[] {5, 0}); // first line 5
        for (String s : new String[] {file, qual}) {
            boolean odd = (flags & (s == file ? 4 : 8)) != 0;
            if (odd) {
                out.write(new byte[] {(byte) 0xa4, 0, 0, 0, 9, 0});
            }
            byte[] b = s.getBytes(StandardCharsets.US_ASCII);
            out.write(b.length);
            out.write(b);
        }
        if ((flags & 16) != 0) {
            out.write(new byte[] {(byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff, 0, 0, 0, 0});
        }
        if ((flags & 32) != 0) {
            out.write(new byte[] {1, 8, 0, 0, 0, 0, 0, 0, 0});
        }
        out.write(new byte[] {(byte) (index + 2), 0});
        out.write(table);
        return out.toByteArray();
    }
}
