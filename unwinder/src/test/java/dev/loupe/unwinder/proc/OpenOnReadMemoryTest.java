package dev.loupe.unwinder.proc;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A process's memory opened at its first read: nothing is opened for a reader that reads nothing. */
class OpenOnReadMemoryTest {
    @TempDir
    Path dir;

    @Test
    void opensAtTheFirstReadAndNotBefore() throws Exception {
        Path procDir = Files.createDirectories(dir.resolve("42"));
        ProcessMemory m = ProcessMemory.openOnRead(dir, 42);
        assertFalse(((OpenOnReadMemory) m).isOpen());
        // No mem file yet: nothing failed at open, the read says the process is not there.
        assertThrows(IOException.class, () -> m.readLong(0x1000));
        byte[] bytes = new byte[0x2000];
        ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).putLong(0x1000, 0x1122334455667788L);
        Files.write(procDir.resolve("mem"), bytes);
        assertEquals(0x1122334455667788L, m.readLong(0x1000));
        assertTrue(((OpenOnReadMemory) m).isOpen());
        m.close();
        assertFalse(((OpenOnReadMemory) m).isOpen());
        assertThrows(IOException.class, () -> m.readLong(0x1000), "closed stays closed");
    }
}
