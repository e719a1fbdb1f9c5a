package dev.loupe.unwinder.proc;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/** {@link ProcessMemory} over {@code /proc/PID/mem}. */
final class ProcMemFile implements ProcessMemory {
    private final Path path;
    private final FileChannel channel;

    private ProcMemFile(Path path, FileChannel channel) {
        this.path = path;
        this.channel = channel;
    }

    static ProcMemFile open(Path memFile) throws IOException {
        return new ProcMemFile(memFile, FileChannel.open(memFile, StandardOpenOption.READ));
    }

    @Override
    public void read(long address, ByteBuffer dst) throws IOException {
        if (address < 0 || address + dst.remaining() < address) {
            throw new IOException(path + ": address 0x" + Long.toHexString(address) + " outside user space");
        }
        long at = address;
        while (dst.hasRemaining()) {
            int n;
            try {
                n = channel.read(dst, at);
            } catch (IOException e) {
                throw new IOException(path + ": cannot read " + dst.remaining() + " bytes at 0x" + Long.toHexString(at)
                        + ": " + e.getMessage(), e);
            } catch (IllegalArgumentException e) { // a position the channel refuses
                throw new IOException(path + ": cannot read at 0x" + Long.toHexString(at), e);
            }
            if (n <= 0) {
                // The kernel answers end-of-file once the process's address space is gone.
                throw new ProcessGoneException(path + ": end of file at 0x" + Long.toHexString(at) + " (process exited?)");
            }
            at += n;
        }
    }

    @Override
    public void close() throws IOException {
        channel.close();
    }
}
