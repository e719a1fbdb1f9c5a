package dev.loupe.unwinder.proc;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;

/**
 * Reads a process's memory: positional reads of {@code /proc/PID/mem}, opened read-only, never written. Every read
 * either fills its buffer or throws {@link IOException}, never an unchecked exception: {@link ProcessGoneException}
 * once the process has exited (the kernel answers end of file), a plain IOException for an address it has not
 * mapped ({@code EIO}) or one outside user space.
 */
public interface ProcessMemory extends AutoCloseable {

    /** Opens {@code procRoot/PID/mem} read-only. IOException: no such process, or no permission to read it. */
    static ProcessMemory open(Path procRoot, int pid) throws IOException {
        return open(procRoot.resolve(Integer.toString(pid)));
    }

    /** Opens {@code procDir/mem} read-only ({@code procDir}: {@code /proc/self}, {@code /proc/PID}). */
    static ProcessMemory open(Path procDir) throws IOException {
        return ProcMemFile.open(procDir.resolve("mem"));
    }

    /**
     * As {@link #open(Path, int)}, but the file is opened at the first read: a reader that may need no read of the
     * process at all (names it found elsewhere) costs no open. A process gone by then fails that read, as any read.
     */
    static ProcessMemory openOnRead(Path procRoot, int pid) {
        return new OpenOnReadMemory(procRoot.resolve(Integer.toString(pid)));
    }

    /** Fills {@code dst} from its position to its limit with the bytes at {@code address} onwards. */
    void read(long address, ByteBuffer dst) throws IOException;

    /** {@code length} bytes at {@code address}, little-endian, position 0. */
    default ByteBuffer read(long address, int length) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(length).order(ByteOrder.LITTLE_ENDIAN);
        read(address, b);
        return b.flip();
    }

    default long readLong(long address) throws IOException {
        return read(address, 8).getLong(0);
    }

    default int readInt(long address) throws IOException {
        return read(address, 4).getInt(0);
    }

    @Override
    void close() throws IOException;
}
