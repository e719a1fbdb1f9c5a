package dev.loupe.bpf;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Real libbpf failures reach Java as exceptions carrying errno text and libbpf's own words. */
class LibBpfTest {
    @Test
    void libbpfLoadsHere() {
        assertNull(LibBpf.loadError());
    }

    @Test
    void openingAnObjectThatIsNotElfFailsWithLibbpfsMessage() {
        {
            byte[] junk = "this is not an ELF object at all, just text..........".getBytes();
            BpfException e = assertThrows(BpfException.class, () -> BpfObject.open("junk", junk));
            assertTrue(e.getMessage().startsWith("bpf_object__open_mem(junk) failed: "), e.getMessage());
            assertTrue(e.errno() > 0, "errno captured");
            assertTrue(e.getMessage().contains("(" + errnoName(e.errno()) + ")"), e.getMessage());
            assertTrue(e.getMessage().contains("libbpf said:") && e.getMessage().contains("libbpf: "), e.getMessage());
        }
    }

    @Test
    void mapCallsOnABadFdGiveErrnoText() {
        try (Arena arena = Arena.ofConfined()) {
            BpfException e = assertThrows(BpfException.class, () ->
                    LibBpf.MAP_LOOKUP_ELEM.status("nothing", 999_999, arena.allocate(4), arena.allocate(8)));
            assertEquals(9, e.errno());
            assertEquals("bpf_map_lookup_elem(nothing) failed: Bad file descriptor (EBADF)", e.getMessage());
        }
    }

    private static String errnoName(int errno) {
        String d = Errno.describe(errno);
        return d.substring(d.lastIndexOf('(') + 1, d.length() - 1);
    }
}
