package dev.loupe.unwinder.hotspot;

import dev.loupe.unwinder.proc.ProcessGoneException;
import dev.loupe.unwinder.proc.ProcessMemory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * An address space in memory, for the fuzz targets: a few regions of bytes at fixed addresses, nothing mapped
 * elsewhere. A read answers as {@code /proc/PID/mem} does ({@link dev.loupe.unwinder.proc.ProcMemFile}): the bytes,
 * or a plain IOException when any byte of it is not mapped or the address is outside user space, or, once the
 * "process" has exited (after {@code goneAfterReads} reads, if set), {@link ProcessGoneException} for every read.
 *
 * <p>It counts what is asked of it: reads and bytes, in total and since {@link #mark()}, and fails with an
 * {@link AssertionError} (an Error: no reader's catch swallows it) at the first read past the cap set with
 * {@link #cap}, so a reader that loops or re-reads without end is a finding rather than a timeout.
 */
final class FakeProcessMemory implements ProcessMemory {
    /** A mapped range: {@code bytes} at {@code base}. */
    record Region(long base, byte[] bytes) {
        long end() {
            return base + bytes.length;
        }
    }

    private final Region[] regions; // sorted by base, disjoint
    private final long mappedBytes;
    private final long goneAfterReads;
    private long reads;
    private long bytes;
    private long readsAtMark;
    private long bytesAtMark;
    private long maxReads = Long.MAX_VALUE;
    private long maxBytes = Long.MAX_VALUE;
    private long largestRead;
    private long readsWhileGone;
    private boolean closed;

    static final int PAGE = 4096;

    /**
     * Each region is mapped as the kernel maps memory, in whole pages: its bytes at its base, zeros around them to the
     * pages' bounds. Regions whose pages overlap an earlier one's (in {@code regions}' order), or that reach past user
     * space, are left out.
     */
    FakeProcessMemory(List<Region> regions, long goneAfterReads) {
        List<Region> kept = new ArrayList<>();
        for (Region given : regions) {
            if (given.bytes.length == 0 || given.base < 0 || given.base + given.bytes.length + PAGE < given.base) {
                continue;
            }
            long low = given.base & -PAGE;
            long high = (given.base + given.bytes.length + PAGE - 1) & -PAGE;
            if (high - low > Integer.MAX_VALUE - PAGE) {
                continue;
            }
            byte[] paged = new byte[(int) (high - low)];
            System.arraycopy(given.bytes, 0, paged, (int) (given.base - low), given.bytes.length);
            Region r = new Region(low, paged);
            boolean overlaps = false;
            for (Region k : kept) {
                overlaps |= r.base < k.end() && k.base < r.end();
            }
            if (!overlaps) {
                kept.add(r);
            }
        }
        kept.sort(Comparator.comparingLong(Region::base));
        this.regions = kept.toArray(new Region[0]);
        long m = 0;
        for (Region r : this.regions) {
            m += r.bytes.length;
        }
        this.mappedBytes = m;
        this.goneAfterReads = goneAfterReads;
    }

    /** From now on, fail any read that takes the reads or bytes since {@link #mark()} past these. */
    void cap(long reads, long bytes) {
        this.maxReads = reads;
        this.maxBytes = bytes;
    }

    /** Starts counting an operation's reads. */
    void mark() {
        readsAtMark = reads;
        bytesAtMark = bytes;
    }

    long readsSinceMark() {
        return reads - readsAtMark;
    }

    long reads() {
        return reads;
    }

    long bytesRead() {
        return bytes;
    }

    long largestRead() {
        return largestRead;
    }

    long mappedBytes() {
        return mappedBytes;
    }

    List<Region> regions() {
        return List.of(regions);
    }

    /** Whether the "process" has exited (reads past {@code goneAfterReads}). */
    boolean gone() {
        return goneAfterReads > 0 && reads >= goneAfterReads;
    }

    /** Reads attempted after the process was gone. */
    long readsWhileGone() {
        return readsWhileGone;
    }

    @Override
    public void read(long address, ByteBuffer dst) throws IOException {
        if (closed) {
            throw new IllegalStateException("read after close");
        }
        int n = dst.remaining();
        if (gone()) {
            reads++;
            readsWhileGone++;
            throw new ProcessGoneException("fake: end of file at 0x" + Long.toHexString(address) + " (process exited)");
        }
        reads++;
        bytes += n;
        largestRead = Math.max(largestRead, n);
        if (reads - readsAtMark > maxReads || bytes - bytesAtMark > maxBytes) {
            throw new AssertionError("unbounded work: " + (reads - readsAtMark) + " reads, " + (bytes - bytesAtMark)
                    + " bytes since the operation began (cap " + maxReads + " reads, " + maxBytes + " bytes; "
                    + mappedBytes + " bytes mapped)");
        }
        if (address < 0 || address + n < address) {
            throw new IOException("fake: address 0x" + Long.toHexString(address) + " outside user space");
        }
        long at = address;
        while (dst.hasRemaining()) {
            Region r = find(at);
            if (r == null) {
                throw new IOException("fake: cannot read " + dst.remaining() + " bytes at 0x" + Long.toHexString(at)
                        + ": Input/output error");
            }
            int off = (int) (at - r.base);
            int take = Math.min(dst.remaining(), r.bytes.length - off);
            dst.put(r.bytes, off, take);
            at += take;
        }
    }

    private Region find(long address) {
        int lo = 0;
        int hi = regions.length - 1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            Region r = regions[mid];
            if (address < r.base) {
                hi = mid - 1;
            } else if (address >= r.end()) {
                lo = mid + 1;
            } else {
                return r;
            }
        }
        return null;
    }

    /** A fresh memory over the same regions (their bytes shared), counting from zero, open. */
    FakeProcessMemory reopened() {
        return new FakeProcessMemory(List.of(regions), goneAfterReads);
    }

    /** Writes {@code width} bytes of {@code value} at {@code address} into a region (tests making lies of seeds). */
    void poke(long address, int width, long value) {
        Region r = find(address);
        if (r == null || !mapped(address, width)) {
            throw new IllegalArgumentException("not mapped: 0x" + Long.toHexString(address));
        }
        for (int i = 0; i < width; i++) {
            r.bytes[(int) (address - r.base) + i] = (byte) (value >>> (8 * i));
        }
    }

    /** Whether [address, address + length) is mapped. */
    boolean mapped(long address, long length) {
        long at = address;
        long end = address + length;
        if (address < 0 || end < address) {
            return false;
        }
        while (at < end) {
            Region r = find(at);
            if (r == null) {
                return false;
            }
            at = r.end();
        }
        return true;
    }

    /** Whether {@code s}'s UTF-8 bytes followed by a NUL are somewhere in the mapped bytes. */
    boolean holdsCString(String s) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        byte[] withNul = java.util.Arrays.copyOf(b, b.length + 1);
        return holds(withNul);
    }

    /** Whether {@code needle} is somewhere in one region's bytes. */
    boolean holds(byte[] needle) {
        for (Region r : regions) {
            byte[] h = r.bytes;
            outer:
            for (int i = 0; i + needle.length <= h.length; i++) {
                for (int j = 0; j < needle.length; j++) {
                    if (h[i + j] != needle[j]) {
                        continue outer;
                    }
                }
                return true;
            }
        }
        return false;
    }

    @Override
    public void close() {
        closed = true;
    }
}
