package dev.loupe.unwinder.golang;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The Go 1.2–1.15 and 1.16–1.17 layouts, which no binary on this machine has: tables written here from the
 * layout of src/runtime/symtab.go of those releases (functab of {entry, funcoff} uintptr pairs and a
 * closing end pc; _func starting with entry uintptr and nameoff int32; names relative to the table in
 * 1.2, to funcnametab in 1.16). What only a real old binary could show is not shown here.
 */
class OlderPclntabFormatsTest {
    private static final List<GoPclntab.GoFunction> FUNCS = List.of(
            new GoPclntab.GoFunction("runtime.text.first", 0x401000, 0x401040),
            new GoPclntab.GoFunction("main.(*conn).serve", 0x401040, 0x401100),
            new GoPclntab.GoFunction("main.main", 0x401100, 0x401234));

    /** Go 1.2: header, functab at 8+ptr, _func records, names, all offsets from the table start. */
    static byte[] go12() {
        int n = FUNCS.size();
        int functab = 16;
        int funcs = functab + (2 * n + 1) * 8;
        int names = funcs + n * 16;
        ByteBuffer b = ByteBuffer.allocate(names + 256).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(0, 0xfffffffb).put(6, (byte) 1).put(7, (byte) 8).putLong(8, n);
        int nameAt = names;
        for (int i = 0; i < n; i++) {
            GoPclntab.GoFunction f = FUNCS.get(i);
            b.putLong(functab + 16 * i, f.entry()).putLong(functab + 16 * i + 8, funcs + 16L * i);
            b.putLong(funcs + 16 * i, f.entry()).putInt(funcs + 16 * i + 8, nameAt);
            byte[] nm = f.name().getBytes(StandardCharsets.UTF_8);
            b.put(nameAt, nm);
            nameAt += nm.length + 1;
        }
        b.putLong(functab + 16 * n, FUNCS.get(n - 1).end());
        return java.util.Arrays.copyOf(b.array(), nameAt);
    }

    /** Go 1.16: header with table offsets; funcnametab; functab (pcln) with funcoffs relative to it. */
    static byte[] go116() {
        int n = FUNCS.size();
        ByteArrayOutputStream nameTab = new ByteArrayOutputStream();
        List<Integer> nameOffs = new ArrayList<>();
        for (GoPclntab.GoFunction f : FUNCS) {
            nameOffs.add(nameTab.size());
            nameTab.writeBytes(f.name().getBytes(StandardCharsets.UTF_8));
            nameTab.write(0);
        }
        int funcname = 8 + 7 * 8;
        int pcln = funcname + nameTab.size() + 3 & ~3;
        int funcs = (2 * n + 1) * 8; // relative to pcln
        // Ends with the last _func's nameoff: every byte is needed, so every truncation must fail.
        ByteBuffer b = ByteBuffer.allocate(pcln + funcs + (n - 1) * 16 + 12).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(0, 0xfffffffa).put(6, (byte) 1).put(7, (byte) 8).putLong(8, n).putLong(16, 1)
                .putLong(24, funcname).putLong(32, pcln).putLong(40, pcln).putLong(48, pcln).putLong(56, pcln);
        b.put(funcname, nameTab.toByteArray());
        for (int i = 0; i < n; i++) {
            GoPclntab.GoFunction f = FUNCS.get(i);
            b.putLong(pcln + 16 * i, f.entry()).putLong(pcln + 16 * i + 8, funcs + 16L * i);
            b.putLong(pcln + funcs + 16 * i, f.entry()).putInt(pcln + funcs + 16 * i + 8, nameOffs.get(i));
        }
        b.putLong(pcln + 16 * n, FUNCS.get(n - 1).end());
        return b.array();
    }

    @Test
    void go12Layout() throws Exception {
        GoPclntab t = GoPclntab.parse("go12", go12(), 0, 0, List.of());
        assertEquals("go1.2", t.format());
        assertEquals(FUNCS, t.functions());
        assertEquals("main.(*conn).serve", t.lookup(0x4010ff).orElseThrow().name());
    }

    @Test
    void go116Layout() throws Exception {
        GoPclntab t = GoPclntab.parse("go116", go116(), 0, 0, List.of());
        assertEquals("go1.16", t.format());
        assertEquals(FUNCS, t.functions());
    }

    @Test
    void everyTruncationIsRejectedWithAMessage() {
        for (byte[] whole : List.of(go12(), go116())) {
            for (int len = 0; len < whole.length; len++) {
                byte[] cut = java.util.Arrays.copyOf(whole, len);
                GoBinaryException e = assertThrows(GoBinaryException.class, () -> GoPclntab.parse("cut", cut, 0, 0, List.of()),
                        "length " + len);
                assertTrue(e.getMessage().startsWith("cut: .gopclntab: "), e.getMessage());
            }
        }
    }
}
