package dev.loupe.unwinder.v8;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The host's node 20 (Debian's, V8 11.3) read as the agent reads it: values known from V8's sources for that version. */
class V8MetadataTest {
    static final Path NODE = Path.of("/usr/bin/node");

    @TempDir
    Path dir;

    @Test
    void readsTheHostsNodeMetadata() throws Exception {
        V8Metadata md = V8Metadata.read(NODE);
        assertTrue(md.values().size() > 500, md.values().size() + " values");
        assertEquals(-8L, md.get("off_fp_context_or_frame_type"));
        assertEquals(-16L, md.get("off_fp_function"));
        assertEquals(-32L, md.get("off_fp_bytecode_array"));
        assertEquals(-40L, md.get("off_fp_bytecode_offset"));
        assertEquals(0L, md.get("class_HeapObject__map__Map"), "a zero the compiler put in .bss");
        assertEquals(1L, md.get("HeapObjectTag"));
        assertEquals(1L, md.get("SmiValueShift"), "the Smi tag's width");
        assertEquals(31L, md.get("SmiShiftSize"), "the padding above it");
        // Builtins_JSEntry and Builtins_InterpreterEntryTrampoline lie in the embedded builtins
        assertTrue(md.builtinsLow() <= 0x18cdd80L && 0x18cfc40L + 876 <= md.builtinsHigh(),
                Long.toHexString(md.builtinsLow()) + ".." + Long.toHexString(md.builtinsHigh()));
        assertTrue(md.builtinsHigh() - md.builtinsLow() < 16 << 20, "the builtins only, not all of .text");
    }

    /**
     * A binary stripped of its Builtins_ symbols (Debian 12's libnode.so.108) has its builtins found as the largest
     * range no FDE covers: in the host's node, whose symbols say the range, that gap holds exactly the builtins and
     * the alignment padding around them (node 22's official binary: 1d50178-1f32000 around 1d52000-1f31a38).
     */
    @Test
    void theLargestUncoveredRangeIsTheBuiltins() throws Exception {
        V8Metadata md = V8Metadata.read(NODE);
        long[] gap = V8Metadata.builtinsGap(NODE, md.loadSegments());
        assertTrue(gap != null && gap[0] <= md.builtinsLow() && md.builtinsHigh() <= gap[1]
                        && md.builtinsLow() - gap[0] < 64 << 10 && gap[1] - md.builtinsHigh() < 64 << 10,
                (gap == null ? "none" : Long.toHexString(gap[0]) + ".." + Long.toHexString(gap[1])) + " for the builtins "
                        + Long.toHexString(md.builtinsLow()) + ".." + Long.toHexString(md.builtinsHigh()));
    }

    @Test
    void theHostsNodeHasALayout() throws Exception {
        V8Layout l = V8Layout.of(V8Metadata.read(NODE));
        assertEquals(-16, l.i(V8Layout.Field.FP_FUNCTION));
        assertEquals(32, l.smiShift());
        assertEquals(42L, l.smi(42L << 32));
        assertEquals(24, l.i(V8Layout.Field.JS_FUNCTION_SHARED), "JSFunction: map, properties, elements, shared");
        assertTrue(l.i(V8Layout.Field.JS_FUNCTION_TYPE) > l.i(V8Layout.Field.FIRST_NONSTRING_TYPE));
        assertTrue(l.i(V8Layout.Field.SFI_TYPE) > l.i(V8Layout.Field.FIRST_NONSTRING_TYPE));
    }

    @Test
    void aBinaryWithoutMetadataIsUnsupported() throws Exception {
        V8Layout.Unsupported e = assertThrows(V8Layout.Unsupported.class, () -> V8Metadata.read(Path.of("/bin/true")));
        assertTrue(e.getMessage().contains("no v8dbg_ symbols"), e.getMessage());
        Path junk = Files.write(dir.resolve("junk"), new byte[] {1, 2, 3});
        assertThrows(V8Layout.Unsupported.class, () -> V8Metadata.read(junk));
    }

    @Test
    void aMissingFieldNamesItself() throws Exception {
        V8Metadata md = V8Metadata.read(NODE);
        var values = new java.util.HashMap<>(md.values());
        values.remove("off_fp_function");
        V8Layout.Unsupported e = assertThrows(V8Layout.Unsupported.class,
                () -> V8Layout.of(new V8Metadata(values, md.builtinsLow(), md.builtinsHigh(), md.loadSegments())));
        assertEquals("V8 metadata lacks off_fp_function", e.getMessage());
    }
}
