package dev.loupe.unwinder.hotspot;

import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The checks that turn a pointer that is not a Method into empty rather than garbage. */
class MethodNameValidationTest {
    private static String decode(int... bytes) {
        ByteBuffer b = ByteBuffer.allocate(bytes.length);
        for (int x : bytes) {
            b.put((byte) x);
        }
        return MethodNames.modifiedUtf8(b.flip());
    }

    @Test
    void modifiedUtf8() {
        assertEquals("ab", decode('a', 'b'));
        assertEquals("\u00e9", decode(0xC3, 0xA9));
        assertEquals("\u20ac", decode(0xE2, 0x82, 0xAC));
        assertNull(decode('a', 0));            // a raw NUL never appears in modified UTF-8
        assertNull(decode(0xF0, 0x9F, 0x98, 0x80)); // 4-byte forms do not either
        assertNull(decode(0xC3));              // cut short
        assertNull(decode('a', 0x07));         // control characters are not names
    }

    @Test
    void names() {
        assertTrue(MethodNames.legalMethodName("spinA"));
        assertTrue(MethodNames.legalMethodName("<init>"));
        assertFalse(MethodNames.legalMethodName("a.b"));
        assertFalse(MethodNames.legalMethodName("<foo>"));
        assertTrue(MethodNames.legalClassName("java/util/Map$Entry"));
        assertFalse(MethodNames.legalClassName("java//Map"));
        assertFalse(MethodNames.legalClassName("[Ljava/lang/Object;"));
        assertEquals("java.util.Map$Entry", MethodNames.externalClassName("java/util/Map$Entry"));
        assertEquals("a.B$$Lambda/0x0000000800c01234", MethodNames.externalClassName("a/B$$Lambda+0x0000000800c01234"));
    }
}
