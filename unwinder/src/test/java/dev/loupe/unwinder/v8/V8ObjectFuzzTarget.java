package dev.loupe.unwinder.v8;

import dev.loupe.unwinder.fuzz.FuzzInput;
import dev.loupe.unwinder.proc.ProcessMemory;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Fuzz target for the V8 object reader ({@link V8Objects#shared}): a process's heap holding one SharedFunctionInfo,
 * its name (a string of any of the kinds read: sequential one- or two-byte, cons, thin, sliced; directly or in a
 * ScopeInfo after context locals, maybe behind an empty function name) and its Script, with node 20's layout. From
 * the input: the text, the string's kind, and the damage (a wrong map type, a string header's type and length, any
 * pointer overwritten). Memory outside the heap is not mapped.
 *
 * <p>The reader may refuse ({@link V8Objects.NotObject}) and nothing else: any other exception is a finding. So is a
 * name past {@link V8Objects#MAX_STRING}, and, with no damage, any name or script other than what was written.
 */
public final class V8ObjectFuzzTarget {
    static final long BASE = 0x7f0000100000L;
    static final V8Layout LAYOUT = Node20Layout.layout();
    static final int SFI = 262;
    static final int SCOPE_INFO = 261;
    static final int SCRIPT = 167;

    private V8ObjectFuzzTarget() {}

    /** A heap under construction: objects 8-byte aligned from BASE, each map an object holding its instance type. */
    static final class Heap {
        final ByteBuffer image = ByteBuffer.allocate(1 << 16).order(ByteOrder.LITTLE_ENDIAN);
        final List<Integer> pointerSlots = new ArrayList<>();
        int top = 64;

        long alloc(int bytes) {
            long at = BASE + top;
            top = (top + bytes + 7) & ~7;
            if (top > image.capacity()) {
                throw new IllegalStateException("heap full");
            }
            return at;
        }

        /** A new object of {@code size} bytes whose map says {@code type}; its tagged address. */
        long object(int type, int size) {
            long map = alloc(16);
            image.putShort((int) (map - BASE) + 12, (short) type);
            long o = alloc(size);
            putPointer(o, 0, map | 1);
            return o | 1;
        }

        void putPointer(long tagged, int offset, long value) {
            int at = (int) ((tagged & ~3L) - BASE) + offset;
            image.putLong(at, value);
            pointerSlots.add(at);
        }

        void putLong(long tagged, int offset, long value) {
            image.putLong((int) ((tagged & ~3L) - BASE) + offset, value);
        }

        void putInt(long tagged, int offset, int value) {
            image.putInt((int) ((tagged & ~3L) - BASE) + offset, value);
        }

        long seq(String text, boolean oneByte) {
            byte[] b = text.getBytes(oneByte ? StandardCharsets.ISO_8859_1 : StandardCharsets.UTF_16LE);
            long s = object(oneByte ? 8 : 0, 16 + b.length);
            putInt(s, 12, text.length());
            image.put((int) ((s & ~3L) - BASE) + 16, b);
            return s;
        }

        long string(String text, int kind, int split) {
            int at = text.isEmpty() ? 0 : split % (text.length() + 1);
            return switch (kind) {
                case 0 -> seq(text, true);
                case 1 -> seq(text, false);
                case 2 -> { // cons of a one-byte and a two-byte part
                    long c = object(0x20 | 1, 32);
                    putInt(c, 12, text.length());
                    putPointer(c, 16, seq(text.substring(0, at), true));
                    putPointer(c, 24, seq(text.substring(at), false));
                    yield c;
                }
                case 3 -> {
                    long t = object(0x20 | 5 | 8, 24);
                    putInt(t, 12, text.length());
                    putPointer(t, 16, seq(text, true));
                    yield t;
                }
                default -> { // a slice of a longer string
                    long sl = object(0x20 | 3 | 8, 32);
                    putInt(sl, 12, text.length());
                    putPointer(sl, 16, seq("x".repeat(at) + text + "yz", true));
                    putLong(sl, 24, (long) at << 32);
                    yield sl;
                }
            };
        }
    }

    public static void fuzzerTestOneInput(byte[] data) {
        FuzzInput in = new FuzzInput(data);
        int flags = in.u8();
        boolean badSfiType = (flags & 1) != 0;
        boolean viaScopeInfo = (flags & 2) != 0;
        boolean oddString = (flags & 4) != 0;
        boolean corrupt = (flags & 8) != 0;
        boolean withScript = (flags & 16) != 0;
        boolean emptyFirst = (flags & 32) != 0;
        int kind = in.intIn(0, 4);
        int split = in.u8();
        int locals = in.intIn(0, 3);
        byte[] raw = in.bytes(48);
        StringBuilder t = new StringBuilder();
        for (byte b : raw) {
            t.append((char) ('a' + (b & 0xff) % 26));
        }
        String name = t.isEmpty() ? "f" : t.toString();
        String scriptName = "/srv/app/" + name + ".js";
        int oddType = oddString ? in.u8() : 0;
        int oddLength = oddString ? in.i32() : 0;
        int corruptSlot = corrupt ? in.u16() : 0;
        long corruptValue = corrupt ? in.i64() : 0;

        Heap h = new Heap();
        long sfi = h.object(badSfiType ? SFI + 1 : SFI, 48);
        long nameString = h.string(name, kind, split);
        if (oddString) {
            h.image.putShort((int) ((h.image.getLong((int) ((nameString & ~3L) - BASE)) & ~3L) - BASE) + 12, (short) oddType);
            h.putInt(nameString, 12, oddLength);
        }
        if (viaScopeInfo) {
            int slots = 3 + 2 * locals + 4;
            long si = h.object(SCOPE_INFO, 8 + 8 * slots);
            h.putLong(si, 8 + 8 * 2, (long) locals << 32);
            for (int i = 0; i < 2 * locals; i++) {
                h.putPointer(si, 8 + 8 * (3 + i), h.seq("local" + i, true)); // before the scan: never the name
            }
            int at = 3 + 2 * locals;
            if (emptyFirst) {
                h.putPointer(si, 8 + 8 * at++, h.seq("", true));
            }
            h.putPointer(si, 8 + 8 * at, nameString);
            h.putPointer(sfi, 16, si);
        } else {
            h.putPointer(sfi, 16, nameString);
        }
        if (withScript) {
            long script = h.object(SCRIPT, 64);
            h.putPointer(script, 16, h.seq(scriptName, true));
            h.putPointer(sfi, 32, script);
        }
        if (corrupt) {
            int slot = h.pointerSlots.get(corruptSlot % h.pointerSlots.size());
            h.image.putLong(slot, corruptValue);
        }
        byte[] image = h.image.array();
        ProcessMemory pm = new ProcessMemory() {
            @Override
            public void read(long address, ByteBuffer dst) throws IOException {
                long off = address - BASE;
                if (off < 0 || off + dst.remaining() > image.length) {
                    throw new IOException("not mapped");
                }
                dst.put(image, (int) off, dst.remaining());
            }

            @Override
            public void close() {}
        };
        V8Objects.Shared read;
        boolean damaged = badSfiType || oddString || corrupt;
        try {
            read = new V8Objects(pm, LAYOUT).shared(sfi & ~3L);
        } catch (V8Objects.NotObject refused) {
            if (!damaged) {
                throw new IllegalStateException("well-formed objects refused: " + refused.getMessage());
            }
            return;
        } catch (IOException e) {
            throw new IllegalStateException("a read outside the heap escaped as " + e);
        }
        if (read.name().length() > V8Objects.MAX_STRING || read.script() != null && read.script().length() > V8Objects.MAX_STRING) {
            throw new IllegalStateException("past the caps: " + read);
        }
        if (!damaged && !(read.name().equals(name) && java.util.Objects.equals(read.script(), withScript ? scriptName : null))) {
            throw new IllegalStateException("read " + read + ", wrote " + name + " in " + (withScript ? scriptName : null));
        }
    }

    /** Kept inputs: each string kind, directly and in a ScopeInfo, and damaged ones. */
    public static void writeSeeds(Path dir) throws IOException {
        for (int kind = 0; kind <= 4; kind++) {
            Files.write(dir.resolve("seed-kind-" + kind), seed(16, kind, 3, 0, "hot"));
            Files.write(dir.resolve("seed-scope-info-" + kind), seed(2 | 16 | 32, kind, 1, 2, "caller"));
        }
        Files.write(dir.resolve("seed-bad-type"), seed(1, 0, 0, 0, "f"));
        byte[] odd = seed(4 | 8, 2, 2, 1, "main");
        Files.write(dir.resolve("seed-odd"), java.util.Arrays.copyOf(odd, odd.length + 15));
    }

    private static byte[] seed(int flags, int kind, int split, int locals, String name) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write(flags);
        out.write(kind);
        out.write(split);
        out.write(locals);
        out.write(name.length());
        for (char c : name.toCharArray()) {
            out.write(c - 'a');
        }
        return out.toByteArray();
    }
}
