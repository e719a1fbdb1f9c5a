package dev.loupe.unwinder.proc;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ProcessMemoryTest {
    static final Path PROC = Path.of("/proc");

    /** A mapped address reads; an unmapped one is a plain IOException (the process is still there), not "gone". */
    @Test
    void readsMappedMemoryAndRefusesUnmappedAddresses() throws Exception {
        MapEntry vdso = Vdso.mapping(PROC.resolve("self")).orElseThrow();
        try (ProcessMemory mem = ProcessMemory.open(PROC.resolve("self"))) {
            assertEquals(0x464c457f, mem.readInt(vdso.start()), "the vdso's ELF magic, little-endian");
            ByteBuffer b = mem.read(vdso.start(), 16);
            assertEquals(0, b.position());
            assertEquals(16, b.limit());
            IOException unmapped = assertThrows(IOException.class, () -> mem.readLong(0));
            assertFalse(unmapped instanceof ProcessGoneException, unmapped.toString());
            assertTrue(unmapped.getMessage().startsWith(PROC.resolve("self").resolve("mem") + ": cannot read 8 bytes at 0x0"),
                    unmapped.getMessage());
            IOException outside = assertThrows(IOException.class, () -> mem.readLong(-8));
            assertTrue(outside.getMessage().endsWith("address 0xfffffffffffffff8 outside user space"), outside.getMessage());
        }
    }

    /** Once the process has exited, reads through a descriptor opened before end of file: ProcessGoneException. */
    @Test
    void aProcessThatExitedIsGone() throws Exception {
        Process sleep = new ProcessBuilder("sleep", "60").start();
        try (ProcessMemory mem = ProcessMemory.open(PROC, (int) sleep.pid())) {
            sleep.destroyForcibly();
            sleep.waitFor();
            IOException gone = assertThrows(IOException.class, () -> mem.readLong(0x400000));
            assertInstanceOf(ProcessGoneException.class, gone);
            assertTrue(gone.getMessage().contains("(process exited?)"), gone.getMessage());
        } finally {
            sleep.destroyForcibly();
        }
    }

    @Test
    void noSuchProcessFailsToOpen() {
        assertThrows(IOException.class, () -> ProcessMemory.open(PROC, Integer.MAX_VALUE));
    }
}
