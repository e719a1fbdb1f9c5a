package dev.loupe.unwinder.proc;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;

/** {@link ProcessMemory#openOnRead}: {@code /proc/PID/mem} opened at the first read, then kept. Thread-safe. */
final class OpenOnReadMemory implements ProcessMemory {
    private final Path procDir;
    private ProcessMemory opened;
    private boolean closed;

    OpenOnReadMemory(Path procDir) {
        this.procDir = procDir;
    }

    @Override
    public synchronized void read(long address, ByteBuffer dst) throws IOException {
        if (closed) {
            throw new IOException(procDir + "/mem: closed");
        }
        if (opened == null) {
            opened = ProcessMemory.open(procDir);
        }
        opened.read(address, dst);
    }

    /** Whether the file was opened (tests). */
    synchronized boolean isOpen() {
        return opened != null;
    }

    @Override
    public synchronized void close() throws IOException {
        closed = true;
        if (opened != null) {
            opened.close();
            opened = null;
        }
    }
}
