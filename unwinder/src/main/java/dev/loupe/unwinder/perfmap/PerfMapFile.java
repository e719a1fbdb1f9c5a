package dev.loupe.unwinder.perfmap;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * A perf map ({@code /tmp/perf-PID.map}, lines {@code START SIZE name}, hex numbers with or without
 * {@code 0x}, the name the rest of the line and possibly with spaces) read into a {@link PerfMapTable},
 * incrementally: the file's identity (device, inode) and how far it was read are kept; a file that grew is
 * parsed from there on, one that shrank, was replaced or was rewritten in place (the bytes just before the
 * read offset changed) is read from scratch. Only complete lines are read: a last line still being written
 * waits for its newline. Malformed lines are skipped and counted.
 *
 * <p>Bounds: the table's {@link Limits} and a heap allowance per read; once either is reached the rest of
 * the file is not read (its bytes are counted in {@link #bytesOverCap}), so a 500 MB map costs what the
 * limits allow and no more. Symlinks and other non-regular files are refused (a FIFO would block the
 * reader), and so is a file not owned by root or by the process (anyone may create files in /tmp).
 *
 * <p>Never throws for a missing, unreadable, partial or changing file: the table keeps what was read. Not
 * thread-safe: used by the symbolizing thread.
 */
final class PerfMapFile {
    /** Per-process bounds on a perf map's table. */
    record Limits(int maxEntries, int maxNameBytes) {
        /**
         * Fits the agent's 96 MiB heap beside the 32 MiB symbol cache: about 4 MiB of ranges and 16 MiB of
         * names at most a process (V8's names average ~60 bytes, so both fill at about the same count).
         */
        static final Limits DEFAULT = new Limits(262_144, 16 << 20);
    }

    /** What a read did. */
    enum Outcome {
        /** No such file (or not readable): the table keeps what it had. */
        MISSING,
        /** Not a regular file or not owned by root or the process: not read. */
        REFUSED,
        /** Same file, nothing new. */
        UNCHANGED,
        /** Same file, new lines parsed. */
        APPENDED,
        /** Read from the start: first read, or the file was replaced, shrank or was rewritten. */
        FROM_SCRATCH
    }

    static final int CHUNK = 256 << 10;
    /** Bytes before the read offset kept to recognise a file rewritten in place with the same identity. */
    static final int TAIL = 32;
    /** The longest line read: a name up to the table's limit plus two 16-digit numbers with 0x and separators. */
    static final int MAX_LINE = PerfMapTable.MAX_NAME_BYTES + 64;

    private final Path path;
    private final Limits limits;
    /** Owners accepted besides root; null: any. */
    private final int[] owners;

    private PerfMapTable table;
    private List<Object> fileKey;
    /** Bytes consumed: through the last complete line read, or up to the size when the rest was over the cap. */
    private long offset;
    private byte[] tail = new byte[0];
    /** The offset is inside a line (the rest went over the cap): the next read drops through its newline. */
    private boolean midLine;

    private long entriesAdded;
    private long linesSkipped;
    private long bytesOverCap;
    private long bytesParsed;
    private long fromScratch;

    PerfMapFile(Path path, Limits limits, int[] owners) {
        this.path = path;
        this.limits = limits;
        this.owners = owners == null ? null : owners.clone();
        this.table = new PerfMapTable(limits.maxEntries(), limits.maxNameBytes());
    }

    Path path() {
        return path;
    }

    /** The function named for {@code addr} by what was read so far, or null. */
    String lookup(long addr) {
        return table.lookup(addr);
    }

    /** Ranges in the table. */
    int entries() {
        return table.size();
    }

    long heapBytes() {
        return table.heapBytes();
    }

    /** Lines parsed into the table since this object was made (over every re-read from scratch). */
    long entriesAdded() {
        return entriesAdded;
    }

    /** Malformed lines skipped (bad numbers, no name, an empty range, a line over {@link #MAX_LINE}). */
    long linesSkipped() {
        return linesSkipped;
    }

    /** Bytes left unread because the table's limits or the heap allowance were reached. */
    long bytesOverCap() {
        return bytesOverCap;
    }

    /** Bytes of complete lines parsed (malformed ones too). */
    long bytesParsed() {
        return bytesParsed;
    }

    /** Reads from scratch after the first (replaced, shrunk or rewritten files). */
    long rereadsFromScratch() {
        return fromScratch;
    }

    /** Reads what is new. {@code heapAllowance}: stop adding once the table would hold more (other processes' maps share a budget). */
    Outcome read(long heapAllowance) {
        Map<String, Object> a;
        try {
            a = Files.readAttributes(path, "unix:dev,ino,uid,size,isRegularFile", LinkOption.NOFOLLOW_LINKS);
        } catch (IOException | RuntimeException e) {
            return Outcome.MISSING; // NoSuchFileException mostly; the process's root gone; no unix view
        }
        if (!Boolean.TRUE.equals(a.get("isRegularFile")) || !ownerAccepted(((Number) a.get("uid")).intValue())) {
            return Outcome.REFUSED;
        }
        List<Object> key = List.of(a.get("dev"), a.get("ino"));
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS)) {
            long size = ch.size();
            boolean scratch = fileKey == null || !key.equals(fileKey) || size < offset || !tailMatches(ch);
            if (scratch) {
                if (fileKey != null) {
                    fromScratch++;
                }
                table = new PerfMapTable(limits.maxEntries(), limits.maxNameBytes());
                fileKey = key;
                offset = 0;
                tail = new byte[0];
                midLine = false;
            }
            boolean grew = size > offset;
            if (grew) {
                parse(ch, size, heapAllowance);
                tail = readTail(ch, offset);
            }
            return scratch ? Outcome.FROM_SCRATCH : grew ? Outcome.APPENDED : Outcome.UNCHANGED;
        } catch (NoSuchFileException e) {
            return Outcome.MISSING;
        } catch (IOException | RuntimeException e) {
            // Gone or cut short while reading: what was parsed is committed and the offset only covers it.
            return Outcome.MISSING;
        }
    }

    private boolean ownerAccepted(int uid) {
        if (uid == 0 || owners == null) {
            return true;
        }
        for (int o : owners) {
            if (o == uid) {
                return true;
            }
        }
        return false;
    }

    private boolean tailMatches(FileChannel ch) throws IOException {
        if (tail.length == 0) {
            return true;
        }
        return Arrays.equals(tail, readTail(ch, offset));
    }

    /** The up to {@link #TAIL} bytes before {@code end}. */
    private static byte[] readTail(FileChannel ch, long end) throws IOException {
        int n = (int) Math.min(TAIL, end);
        ByteBuffer b = ByteBuffer.allocate(n);
        while (b.hasRemaining()) {
            if (ch.read(b, end - n + b.position()) < 0) {
                return Arrays.copyOf(b.array(), b.position()); // shrank meanwhile: will not match next time
            }
        }
        return b.array();
    }

    /** Parses complete lines from {@link #offset} up to {@code size}, committing them; advances the offset. */
    private void parse(FileChannel ch, long size, long heapAllowance) throws IOException {
        byte[] buf = new byte[(int) Math.min(CHUNK, Math.max(size - offset, 1))];
        int len = 0;
        long pos = offset; // file position of buf[0]
        boolean dropping = midLine; // through the next newline: the rest of a line over the cap or too long
        boolean overCap = midLine;
        boolean retried = false;
        try {
            while (pos + len < size) {
                if (len == buf.length) {
                    buf = Arrays.copyOf(buf, (int) Math.min(Math.max(CHUNK, MAX_LINE + 1), buf.length * 2L)); // a long line
                }
                int n = ch.read(ByteBuffer.wrap(buf, len, (int) Math.min(buf.length - len, size - pos - len)), pos + len);
                if (n < 0) {
                    break; // shrank while reading: the next read sees it
                }
                len += n;
                int lineStart = 0;
                for (int nl = indexOf(buf, lineStart, len); nl >= 0; nl = indexOf(buf, lineStart, len)) {
                    if (dropping) {
                        if (overCap) {
                            bytesOverCap += nl + 1 - lineStart;
                        } else {
                            bytesParsed += nl + 1 - lineStart;
                        }
                        dropping = false;
                        overCap = false;
                    } else {
                        int r = parseLine(buf, lineStart, nl, heapAllowance);
                        if (r == FULL && !retried) {
                            // Once a read: newer ranges may have replaced older ones (fewer entries once
                            // committed) and left their names unused (compaction frees them).
                            retried = true;
                            table.commit();
                            if (table.mayHoldUnusedNames()) {
                                table.compact();
                            }
                            r = parseLine(buf, lineStart, nl, heapAllowance);
                        }
                        if (r == FULL) {
                            // The limits are reached: the rest of the file is left unread, and counted.
                            long at = pos + lineStart;
                            bytesOverCap += size - at;
                            offset = size;
                            midLine = size > 0 && !endsWithNewline(ch, size);
                            return;
                        }
                        bytesParsed += nl + 1 - lineStart;
                    }
                    lineStart = nl + 1;
                    offset = pos + lineStart;
                    midLine = false;
                }
                if (lineStart == 0 && len >= MAX_LINE + 1) {
                    // No newline within the longest line we read: skip this one, up to its end.
                    if (!dropping) {
                        linesSkipped++;
                    }
                    bytesParsed += len;
                    dropping = true;
                    overCap = false;
                    pos += len;
                    len = 0;
                    offset = pos;
                    midLine = true;
                    continue;
                }
                System.arraycopy(buf, lineStart, buf, 0, len - lineStart); // keep the partial line
                pos += lineStart;
                len -= lineStart;
            }
        } finally {
            table.commit();
        }
    }

    private static boolean endsWithNewline(FileChannel ch, long size) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(1);
        return ch.read(b, size - 1) == 1 && b.get(0) == '\n';
    }

    private static final int ADDED = 0;
    private static final int SKIPPED = 1;
    private static final int FULL = 2;

    /** One line, {@code buf[from, to)} without its newline. */
    private int parseLine(byte[] buf, int from, int to, long heapAllowance) {
        int end = to;
        while (end > from && (buf[end - 1] == '\r' || buf[end - 1] == ' ' || buf[end - 1] == '\t')) {
            end--; // CRLF files, trailing blanks: not part of the name
        }
        int i = skipBlanks(buf, from, end);
        if (i == end) {
            return SKIPPED; // an empty line: nothing to count
        }
        long start = 0;
        long size = 0;
        int s = i;
        int e = hexEnd(buf, s, end);
        if (e < 0 || (i = skipBlanks(buf, e, end)) == e) {
            linesSkipped++;
            return SKIPPED;
        }
        start = hexValue(buf, s, e);
        s = i;
        e = hexEnd(buf, s, end);
        if (e < 0 || (i = skipBlanks(buf, e, end)) == e || i == end) {
            linesSkipped++;
            return SKIPPED;
        }
        size = hexValue(buf, s, e);
        int nameLen = end - i;
        if (start < 0 || size <= 0 || size > Integer.MAX_VALUE || start > Long.MAX_VALUE - size
                || nameLen > PerfMapTable.MAX_NAME_BYTES) {
            linesSkipped++;
            return SKIPPED;
        }
        if (table.heapBytes() > heapAllowance || !table.add(start, start + size, buf, i, nameLen)) {
            return FULL;
        }
        entriesAdded++;
        return ADDED;
    }

    private static int skipBlanks(byte[] b, int i, int end) {
        while (i < end && (b[i] == ' ' || b[i] == '\t')) {
            i++;
        }
        return i;
    }

    /** End of a hex number at {@code i} (optional 0x, 1 to 16 digits), or -1. */
    private static int hexEnd(byte[] b, int i, int end) {
        if (i + 1 < end && b[i] == '0' && (b[i + 1] == 'x' || b[i + 1] == 'X')) {
            i += 2;
        }
        int digits = 0;
        while (i < end && hexDigit(b[i]) >= 0) {
            i++;
            digits++;
        }
        return digits == 0 || digits > 16 ? -1 : i;
    }

    private static long hexValue(byte[] b, int from, int to) {
        int i = from;
        if (i + 1 < to && b[i] == '0' && (b[i + 1] == 'x' || b[i + 1] == 'X')) {
            i += 2;
        }
        long v = 0;
        for (; i < to; i++) {
            v = (v << 4) | hexDigit(b[i]);
        }
        return v;
    }

    private static int hexDigit(byte c) {
        if (c >= '0' && c <= '9') {
            return c - '0';
        }
        if (c >= 'a' && c <= 'f') {
            return c - 'a' + 10;
        }
        if (c >= 'A' && c <= 'F') {
            return c - 'A' + 10;
        }
        return -1;
    }

    private static int indexOf(byte[] b, int from, int to) {
        for (int i = from; i < to; i++) {
            if (b[i] == '\n') {
                return i;
            }
        }
        return -1;
    }
}
