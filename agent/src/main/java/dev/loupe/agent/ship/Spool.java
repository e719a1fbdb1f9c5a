package dev.loupe.agent.ship;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A sink's durable queue of batches it has not confirmed yet: one file per batch in
 * {@code <root>/<sink>/}, named by a sequence number that sorts in order and carries on after a restart.
 *
 * <p>A batch is on disk (temp file, fsync, rename, fsync of the directory) before {@link #append} returns,
 * and leaves only by {@link #remove} (the sink confirmed it), {@link #quarantine} (the sink rejected it for
 * good: moved to {@code quarantine/} with a {@code .reason} file), or the size cap: to stay within
 * {@code maxBytes} the oldest batches are deleted, counted and logged. The quarantine folder has its own
 * cap, enforced the same way.
 *
 * <p>At open, temp files left by a crash are removed and the remaining batches are queued in sequence
 * order; a batch that turns out to be damaged when read is quarantined with the reason. One process per
 * spool directory (a lock file). Thread-safe: producers append while one delivery thread reads the head.
 */
public final class Spool implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(Spool.class.getName());
    private static final Pattern BATCH = Pattern.compile("(\\d{20})\\.batch");
    private static final Pattern REASON = Pattern.compile("(\\d{20})\\.reason");
    private static final Pattern SINK_NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,63}");
    private static final String TEMP_SUFFIX = ".tmp";
    static final String QUARANTINE = "quarantine";
    private static final String LOCK = ".lock";

    private final String sink;
    private final Path directory;
    private final Path quarantineDirectory;
    private final long maxBytes;
    private final long quarantineMaxBytes;
    private final LongSupplier nanoTime;
    private final FileChannel lockChannel;
    private final FileLock lock;
    /** Serialises producers, so batches are published in sequence order. */
    private final Object appendLock = new Object();

    // Guarded by this.
    private final TreeMap<Long, Entry> queue = new TreeMap<>();
    private final TreeMap<Long, Long> quarantined = new TreeMap<>();
    private long nextSequence;
    private long bytes;
    private long quarantineBytes;
    private long droppedBatches;
    private long droppedBytes;
    private long quarantinedBatches;
    private boolean closed;

    private record Entry(long sequence, long bytes, long spooledAtNanos) {}

    private Spool(String sink, Path directory, long maxBytes, long quarantineMaxBytes, LongSupplier nanoTime,
                  FileChannel lockChannel, FileLock lock) {
        this.sink = sink;
        this.directory = directory;
        this.quarantineDirectory = directory.resolve(QUARANTINE);
        this.maxBytes = maxBytes;
        this.quarantineMaxBytes = quarantineMaxBytes;
        this.nanoTime = nanoTime;
        this.lockChannel = lockChannel;
        this.lock = lock;
    }

    /** A spool of at most {@code maxBytes}, its quarantine an eighth of that; system clocks. */
    public static Spool open(Path root, String sinkName, long maxBytes) throws IOException {
        return open(root, sinkName, maxBytes, maxBytes / 8, System::nanoTime, System::currentTimeMillis);
    }

    /**
     * Opens (creating it if needed) the spool of {@code sinkName} under {@code root}.
     *
     * @param quarantineMaxBytes 0 deletes rejected batches (logged and counted) instead of keeping them
     * @param nanoTime           monotonic clock for batch ages within this run
     * @param epochMillis        wall clock, only to age batches found on disk by their mtime
     */
    public static Spool open(Path root, String sinkName, long maxBytes, long quarantineMaxBytes,
                             LongSupplier nanoTime, LongSupplier epochMillis) throws IOException {
        if (!SINK_NAME.matcher(sinkName).matches()) {
            throw new IllegalArgumentException("spool: sink name \"" + sinkName + "\" must match " + SINK_NAME);
        }
        if (maxBytes <= 0 || quarantineMaxBytes < 0) {
            throw new IllegalArgumentException("spool: max bytes must be > 0 (got " + maxBytes
                    + ") and quarantine max bytes >= 0 (got " + quarantineMaxBytes + ")");
        }
        Path directory = root.resolve(sinkName);
        createPrivateDirectories(directory);
        createPrivateDirectories(directory.resolve(QUARANTINE));
        FileChannel lockChannel = FileChannel.open(directory.resolve(LOCK), StandardOpenOption.CREATE,
                StandardOpenOption.WRITE);
        FileLock lock;
        try {
            lock = lockChannel.tryLock();
        } catch (OverlappingFileLockException e) {
            lock = null;
        }
        if (lock == null) {
            lockChannel.close();
            throw new IOException("spool " + directory + " is in use by another spool (lock " + LOCK + " held)");
        }
        Spool spool = new Spool(sinkName, directory, maxBytes, quarantineMaxBytes, nanoTime, lockChannel, lock);
        try {
            spool.recover(epochMillis.getAsLong());
        } catch (IOException | RuntimeException e) {
            spool.close();
            throw e;
        }
        return spool;
    }

    private static void createPrivateDirectories(Path dir) throws IOException {
        if (Files.isDirectory(dir)) {
            return;
        }
        try {
            Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        } catch (UnsupportedOperationException e) {
            Files.createDirectories(dir);
        }
    }

    /** Rebuilds the queue from the directory: removes temp files, ages batches by mtime. */
    private synchronized void recover(long nowMillis) throws IOException {
        long now = nanoTime.getAsLong();
        long highest = 0;
        int temps = 0;
        List<String> strangers = new ArrayList<>();
        List<Long> truncated = new ArrayList<>();
        try (DirectoryStream<Path> files = Files.newDirectoryStream(directory)) {
            for (Path f : files) {
                String name = f.getFileName().toString();
                Matcher m = BATCH.matcher(name);
                if (name.endsWith(TEMP_SUFFIX)) {
                    Files.deleteIfExists(f);
                    temps++;
                } else if (m.matches()) {
                    long seq = Long.parseLong(m.group(1));
                    BasicFileAttributes a = Files.readAttributes(f, BasicFileAttributes.class);
                    long ageNanos = TimeUnit.MILLISECONDS.toNanos(Math.max(0, nowMillis - a.lastModifiedTime().toMillis()));
                    queue.put(seq, new Entry(seq, a.size(), now - ageNanos));
                    bytes += a.size();
                    highest = Math.max(highest, seq);
                    if (a.size() < BatchFile.MIN_SIZE) {
                        truncated.add(seq);
                    }
                } else if (!name.equals(LOCK) && !name.equals(QUARANTINE)) {
                    strangers.add(name);
                }
            }
        }
        try (DirectoryStream<Path> files = Files.newDirectoryStream(quarantineDirectory)) {
            for (Path f : files) {
                String name = f.getFileName().toString();
                Matcher m = BATCH.matcher(name);
                Matcher r = REASON.matcher(name);
                if (name.endsWith(TEMP_SUFFIX)) {
                    Files.deleteIfExists(f);
                    temps++;
                } else if (m.matches()) {
                    long seq = Long.parseLong(m.group(1));
                    long size = Files.size(f);
                    quarantined.merge(seq, size, Long::sum);
                    quarantineBytes += size;
                    highest = Math.max(highest, seq);
                } else if (r.matches()) {
                    long seq = Long.parseLong(r.group(1));
                    long size = Files.size(f);
                    quarantined.merge(seq, size, Long::sum);
                    quarantineBytes += size;
                    highest = Math.max(highest, seq);
                }
            }
        }
        nextSequence = highest + 1;
        if (temps > 0) {
            fsyncDirectory(directory);
            LOG.log(System.Logger.Level.INFO, "spool " + sink + ": removed " + temps
                    + " unfinished temp file(s) left by an earlier run");
        }
        if (!strangers.isEmpty()) {
            LOG.log(System.Logger.Level.WARNING, "spool " + sink + ": ignoring " + strangers.size()
                    + " file(s) that are not batches in " + directory + ", e.g. " + strangers.getFirst());
        }
        for (long seq : truncated) {
            quarantineLocked(seq, "truncated at start: " + queue.get(seq).bytes() + " bytes, less than a batch header");
        }
        if (!queue.isEmpty()) {
            LOG.log(System.Logger.Level.INFO, "spool " + sink + ": " + queue.size() + " batch(es), " + bytes
                    + " bytes left from an earlier run; sending them first, in order");
        }
    }

    public String sinkName() {
        return sink;
    }

    public Path directory() {
        return directory;
    }

    /**
     * Writes a batch durably and queues it; returns its sequence number. Makes room first by dropping
     * the oldest batches; a batch larger than the whole cap is dropped at once (counted and logged).
     */
    public long append(Map<String, String> attributes, byte[] payload) throws IOException {
        BatchFile.Encoded encoded = BatchFile.encode(attributes, payload);
        long size = encoded.size();
        synchronized (appendLock) {
            long seq;
            synchronized (this) {
                ensureOpen();
                seq = nextSequence++;
                if (size > maxBytes) {
                    droppedBatches++;
                    droppedBytes += size;
                    LOG.log(System.Logger.Level.WARNING, "spool " + sink + ": dropped a new batch of " + size
                            + " bytes: larger than the whole spool (max " + maxBytes + " bytes)" + totals());
                    return seq;
                }
                dropOldestLocked(maxBytes - size);
            }
            Path file = batchFile(directory, seq);
            Path temp = file.resolveSibling(file.getFileName() + TEMP_SUFFIX);
            try (FileChannel ch = FileChannel.open(temp, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
                ByteBuffer[] parts = {encoded.header().duplicate(), ByteBuffer.wrap(encoded.payload()),
                        encoded.trailer().duplicate()};
                while (parts[2].hasRemaining()) {
                    ch.write(parts);
                }
                ch.force(true);
            } catch (IOException e) {
                Files.deleteIfExists(temp);
                throw e;
            }
            moveAtomically(temp, file);
            fsyncDirectory(directory);
            synchronized (this) {
                queue.put(seq, new Entry(seq, size, nanoTime.getAsLong()));
                bytes += size;
                notifyAll();
            }
            return seq;
        }
    }

    /** Deletes the oldest batches until at most {@code target} bytes are queued. */
    private void dropOldestLocked(long target) throws IOException {
        long count = 0;
        long freed = 0;
        while (bytes > target && !queue.isEmpty()) {
            Entry oldest = queue.pollFirstEntry().getValue();
            Files.deleteIfExists(batchFile(directory, oldest.sequence()));
            bytes -= oldest.bytes();
            count++;
            freed += oldest.bytes();
        }
        if (count > 0) {
            fsyncDirectory(directory);
            droppedBatches += count;
            droppedBytes += freed;
            LOG.log(System.Logger.Level.WARNING, "spool " + sink + ": full (max " + maxBytes + " bytes): dropped the "
                    + count + " oldest unsent batch(es), " + freed + " bytes" + totals());
        }
    }

    private String totals() {
        return " (dropped since start: " + droppedBatches + " batch(es), " + droppedBytes + " bytes)";
    }

    /**
     * The oldest waiting batch, read from disk, or empty. A batch that cannot be decoded is quarantined
     * with the reason and the next one is returned.
     */
    public Optional<SpooledBatch> oldest() throws IOException {
        while (true) {
            long seq;
            synchronized (this) {
                ensureOpen();
                if (queue.isEmpty()) {
                    return Optional.empty();
                }
                seq = queue.firstKey();
            }
            byte[] content;
            try {
                content = Files.readAllBytes(batchFile(directory, seq));
            } catch (NoSuchFileException e) {
                synchronized (this) {
                    // Dropped by the cap meanwhile; anything else vanishing is worth a line.
                    Entry gone = queue.remove(seq);
                    if (gone != null) {
                        bytes -= gone.bytes();
                        LOG.log(System.Logger.Level.WARNING, "spool " + sink + ": batch " + seq
                                + " disappeared from " + directory);
                    }
                }
                continue;
            }
            try {
                return Optional.of(BatchFile.decode(seq, content));
            } catch (BatchFile.CorruptBatchException e) {
                synchronized (this) {
                    if (queue.containsKey(seq)) {
                        quarantineLocked(seq, "unreadable: " + e.getMessage());
                    }
                }
            }
        }
    }

    /** Waits until a batch is queued or the time is up; true if one is. */
    public synchronized boolean awaitBatch(long timeoutNanos) throws InterruptedException {
        long deadline = System.nanoTime() + timeoutNanos;
        while (queue.isEmpty() && !closed) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                return false;
            }
            TimeUnit.NANOSECONDS.timedWait(this, left);
        }
        return !queue.isEmpty();
    }

    /** The sink confirmed the batch: deletes it. A sequence no longer queued (dropped meanwhile) is ignored. */
    public synchronized void remove(long sequence) throws IOException {
        ensureOpen();
        Entry e = queue.remove(sequence);
        if (e == null) {
            return;
        }
        bytes -= e.bytes();
        Files.deleteIfExists(batchFile(directory, sequence));
        fsyncDirectory(directory);
    }

    /** The sink rejected the batch for good: moves it to the quarantine folder beside a .reason file. */
    public synchronized void quarantine(long sequence, String reason) throws IOException {
        ensureOpen();
        if (queue.containsKey(sequence)) {
            quarantineLocked(sequence, reason);
        }
    }

    private void quarantineLocked(long sequence, String reason) throws IOException {
        Entry e = queue.remove(sequence);
        bytes -= e.bytes();
        quarantinedBatches++;
        Path from = batchFile(directory, sequence);
        if (quarantineMaxBytes == 0) {
            Files.deleteIfExists(from);
            fsyncDirectory(directory);
            LOG.log(System.Logger.Level.WARNING, "spool " + sink + ": deleted rejected batch " + sequence
                    + " (quarantine disabled): " + reason);
            return;
        }
        byte[] text = (reason + "\n").getBytes(StandardCharsets.UTF_8);
        Path reasonFile = quarantineDirectory.resolve(String.format("%020d.reason", sequence));
        Path reasonTemp = reasonFile.resolveSibling(reasonFile.getFileName() + TEMP_SUFFIX);
        try (FileChannel ch = FileChannel.open(reasonTemp, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
            ByteBuffer b = ByteBuffer.wrap(text);
            while (b.hasRemaining()) {
                ch.write(b);
            }
            ch.force(true);
        }
        moveAtomically(reasonTemp, reasonFile);
        Path to = batchFile(quarantineDirectory, sequence);
        long size;
        try {
            moveAtomically(from, to);
            size = e.bytes();
        } catch (NoSuchFileException gone) {
            size = 0;
        }
        fsyncDirectory(quarantineDirectory);
        fsyncDirectory(directory);
        long added = size + text.length;
        quarantined.merge(sequence, added, Long::sum);
        quarantineBytes += added;
        // Keep the quarantine bounded too: the oldest rejected batches go first, never the one just moved.
        long count = 0;
        long freed = 0;
        for (Long old : List.copyOf(quarantined.keySet())) {
            if (quarantineBytes <= quarantineMaxBytes) {
                break;
            }
            if (old == sequence) {
                continue;
            }
            long size0 = quarantined.remove(old);
            Files.deleteIfExists(batchFile(quarantineDirectory, old));
            Files.deleteIfExists(quarantineDirectory.resolve(String.format("%020d.reason", old)));
            quarantineBytes -= size0;
            count++;
            freed += size0;
        }
        if (count > 0) {
            fsyncDirectory(quarantineDirectory);
            LOG.log(System.Logger.Level.WARNING, "spool " + sink + ": quarantine full (max " + quarantineMaxBytes
                    + " bytes): deleted the " + count + " oldest rejected batch(es), " + freed + " bytes");
        }
    }

    public synchronized SpoolStats stats() {
        long age = queue.isEmpty() ? 0 : Math.max(0, nanoTime.getAsLong() - queue.firstEntry().getValue().spooledAtNanos());
        return new SpoolStats(queue.size(), bytes, age, droppedBatches, droppedBytes, quarantinedBatches, quarantineBytes);
    }

    /** Sequence numbers waiting, oldest first (for tests and diagnostics). */
    synchronized List<Long> sequences() {
        return List.copyOf(queue.keySet());
    }

    private void ensureOpen() throws IOException {
        if (closed) {
            throw new IOException("spool " + sink + " is closed");
        }
    }

    @Override
    public void close() throws IOException {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            notifyAll();
        }
        try {
            lock.release();
        } finally {
            lockChannel.close();
        }
    }

    static Path batchFile(Path dir, long sequence) {
        return dir.resolve(String.format("%020d.batch", sequence));
    }

    private static void moveAtomically(Path from, Path to) throws IOException {
        try {
            Files.move(from, to, StandardCopyOption.ATOMIC_MOVE);
        } catch (AtomicMoveNotSupportedException | FileAlreadyExistsException e) {
            Files.move(from, to, StandardCopyOption.REPLACE_EXISTING);
        }
    }

    /** Makes a rename or delete durable (the directory entry itself). */
    private static void fsyncDirectory(Path dir) throws IOException {
        try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
            ch.force(true);
        }
    }

    @Override
    public String toString() {
        return "Spool[" + directory + ", max " + maxBytes + " bytes]";
    }
}
