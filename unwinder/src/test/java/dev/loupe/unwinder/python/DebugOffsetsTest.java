package dev.loupe.unwinder.python;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link DebugOffsets}: where each offset sits is what the version's own header declares (Debian unstable's
 * libpython3.13-dev and libpython3.14-dev, in the root sid-pythons.sh builds), section by section up to the str
 * section; and a struct that is not one (cookie, version, free-threaded build) is refused, naming why.
 */
class DebugOffsetsTest {
    @ParameterizedTest(name = "3.{0}")
    @CsvSource({"13, usr/include/python3.13/internal/pycore_runtime.h",
            "14, usr/include/python3.14/internal/pycore_debug_offsets.h"})
    void fieldsAreTheHeadersStructInOrder(int minor, String header) throws Exception {
        Path h = PythonTargets.SID.resolve(header);
        assertTrue(Files.isReadable(h), h + " (integration-tests/scripts/sid-pythons.sh, run by ./loupe test)");
        String text = Files.readString(h);
        String body = text.substring(text.indexOf("typedef struct _Py_DebugOffsets {"), text.indexOf("} _Py_DebugOffsets;"));
        List<List<String>> sections = new ArrayList<>();
        List<String> current = null;
        Matcher m = Pattern.compile("struct _\\w+ ?\\{|uint64_t (\\w+);|\\} (\\w+);").matcher(body);
        while (m.find()) {
            if (m.group().startsWith("struct")) {
                current = new ArrayList<>();
                current.add(null);
            } else if (m.group(1) != null && current != null) {
                current.add(m.group(1));
            } else if (m.group(2) != null && current != null) {
                current.set(0, m.group(2));
                sections.add(current);
                current = null;
            }
        }
        List<List<String>> known = DebugOffsets.FIELDS.get(minor);
        assertEquals(known, sections.subList(0, known.size()), "the sections up to unicode_object, in order");
    }

    @Test
    void anotherStructIsRefused() {
        ByteBuffer b = ByteBuffer.allocate(8 * DebugOffsets.words(14)).order(ByteOrder.LITTLE_ENDIAN);
        b.put(0, "xdebugpy".getBytes(StandardCharsets.US_ASCII)).putLong(8, 0x030e0af0L).putLong(16, 0);
        for (int i = 3; i < DebugOffsets.words(14); i++) {
            b.putLong(8 * i, 8L * i);
        }
        assertEquals(8 * DebugOffsets.index(14, "thread_state", "current_frame"),
                assertDoesNotThrow(() -> DebugOffsets.parse(b, 3, 14)).currentFrame());
        assertEquals("CPython 3.13's binary, but _Py_DebugOffsets says version 0x30e0af0", message(b, 3, 13));
        b.putLong(16, 1);
        assertEquals("CPython 3.14 is a free-threaded build", message(b, 3, 14));
        b.put(0, (byte) 'y');
        assertEquals("_PyRuntime of CPython 3.14 does not start with xdebugpy", message(b, 3, 14));
    }

    private static String message(ByteBuffer b, int major, int minor) {
        return assertThrows(PythonProcess.Unsupported.class, () -> DebugOffsets.parse(b, major, minor)).getMessage();
    }

    private static <T> T assertDoesNotThrow(org.junit.jupiter.api.function.ThrowingSupplier<T> s) {
        return org.junit.jupiter.api.Assertions.assertDoesNotThrow(s);
    }
}
