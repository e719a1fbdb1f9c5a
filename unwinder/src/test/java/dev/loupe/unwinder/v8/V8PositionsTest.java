package dev.loupe.unwinder.v8;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** Source position tables written as V8's SourcePositionTableBuilder writes them, and script line ends. */
class V8PositionsTest {

    /** V8's EncodeInt: zig-zag, then 7 bits a byte, low first, the high bit on all but the last. */
    private static void encode(ByteArrayOutputStream out, long value) {
        long v = (value << 1) ^ (value >> 63);
        do {
            int b = (int) (v & 0x7f);
            v >>>= 7;
            out.write(v != 0 ? b | 0x80 : b);
        } while (v != 0);
    }

    /** Entries {code offset, script offset, statement (1) or expression (0)}, as deltas. */
    private static byte[] table(int[]... entries) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        long code = 0;
        long raw = 0;
        for (int[] e : entries) {
            long delta = e[0] - code;
            encode(out, e[2] == 1 ? delta : -delta - 1);
            long r = (long) e[1] << 1; // SourcePosition::raw(): not external, not inlined (inlining id + 1 = 0)
            encode(out, r - raw);
            code = e[0];
            raw = r;
        }
        return out.toByteArray();
    }

    @Test
    void decodesStatementAndExpressionPositions() throws Exception {
        byte[] b = table(new int[] {0, 120, 1}, new int[] {5, 133, 0}, new int[] {5, 90, 1}, new int[] {300, 9000, 1},
                new int[] {301, 40, 0});
        V8Positions p = V8Positions.decode(b, b.length);
        assertArrayEquals(new int[] {0, 5, 5, 300, 301}, p.codeOffsets());
        assertArrayEquals(new int[] {120, 133, 90, 9000, 40}, p.scriptOffsets());
        assertEquals(120, p.scriptOffset(0));
        assertEquals(90, p.scriptOffset(5), "the last entry at the offset");
        assertEquals(90, p.scriptOffset(299));
        assertEquals(9000, p.scriptOffset(300));
        assertEquals(40, p.scriptOffset(5000));
        V8Positions late = V8Positions.decode(table(new int[] {10, 1, 1}), 2);
        assertEquals(-1, late.scriptOffset(3), "before the first entry");
    }

    @Test
    void aTableCutShortIsNoTable() {
        byte[] b = table(new int[] {0, 70000, 1});
        assertThrows(V8Objects.NotObject.class, () -> V8Positions.decode(b, b.length - 1));
        byte[] endless = {(byte) 0x80, (byte) 0x80, (byte) 0x80, (byte) 0x80, (byte) 0x80, (byte) 0x80, (byte) 0x80,
                (byte) 0x80, (byte) 0x80, (byte) 0x80, (byte) 0x80, 0};
        assertThrows(V8Objects.NotObject.class, () -> V8Positions.decode(endless, endless.length));
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        encode(out, 0);
        encode(out, -8); // a position below the script's start
        assertThrows(V8Objects.NotObject.class, () -> V8Positions.decode(out.toByteArray(), out.size()));
    }

    @Test
    void linesAsV8CountsThem() {
        V8Objects.LineEnds e = V8Objects.LineEnds.of("ab\ncd\r\nef\rg\u2028h");
        assertArrayEquals(new int[] {2, 6, 9, 11, 13}, e.ends());
        assertEquals(1, e.line(0));
        assertEquals(1, e.line(2), "the terminator ends its line");
        assertEquals(2, e.line(3));
        assertEquals(2, e.line(5), "CR of CRLF");
        assertEquals(3, e.line(7));
        assertEquals(4, e.line(10));
        assertEquals(5, e.line(12));
        assertEquals(5, e.line(13), "the end of the source");
        assertEquals(0, e.line(14));
        assertEquals(0, e.line(-1));
        assertArrayEquals(new int[] {0}, V8Objects.LineEnds.of("").ends());
    }
}
