package dev.loupe.agent.ship;

import dev.loupe.agent.files.DurableFiles;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
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
 * {@code maxBytes} the oldest batches are deleted, counted and logged. The quarantine folder is a
 * {@link QuarantineStore} with its own cap.
 *
 * <p>At open, temp files left by a crash are removed and the remaining batches are queued in sequence
 * order; a batch that turns out to be damaged when read is quarantined with the reason. One process per
 * spool directory (a lock file). Thread-safe: producers append while one delivery thread reads the head.
 */
public final class Spool implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(Spool.class.getName());
    private static final Pattern BATCH = Pattern.compile("(\\d{20})\\.batch");
    private static final Pattern SEQUENCE = Pattern.compile("\\d{20}");
    private static final Pattern SINK_NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,63}");
    static final String QUARANTINE = "quarantine";
    private static final String LOCK = ".lock";

    private final String sink;
    private final Path directory;
    private final QuarantineStore quarantine;
    private final long maxBytes;
    private final LongSupplier nanoTime;
    private final FileChannel lockChannel;
    private final FileLock lock;
    /** Serialises producers, so batches are published in sequence order. */
    private final Object appendLock = new Object();

    // Guarded by this.
    private final TreeMap<Long, Entry> queue = new TreeMap<>();
    private long nextSequence;
    private long bytes;
    private long droppedBatches;
    private long droppedBytes;
    private boolean closed;

    private record Entry(long sequence, long bytes, long spooledAtNanos) {}

    private Spool(String sink, Path directory, QuarantineStore quarantine, long maxBytes, LongSupplier nanoTime,
                  FileChannel lockChannel, FileLock lock) {
        this.sink = sink;
        this.directory = directory;
        this.quarantine = quarantine;
        this.maxBytes = maxBytes;
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
        DurableFiles.createPrivateDirectories(directory);
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
        Spool spool;
        try {
            // Opened under the lock: opening removes the temp files a crash left.
            QuarantineStore quarantine = QuarantineStore.open(directory.resolve(QUARANTINE), quarantineMaxBytes,
                    ".batch", "spool " + sinkName);
            spool = new Spool(sinkName, directory, quarantine, maxBytes, nanoTime, lockChannel, lock);
        } catch (IOException | RuntimeException e) {
            lock.release();
            lockChannel.close();
            throw e;
        }
        try {
            spool.recover(epochMillis.getAsLong());
        } catch (IOException | RuntimeException e) {
            spool.close();
            throw e;
        }
        return spool;
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
                if (name.endsWith(DurableFiles.TEMP_SUFFIX)) {
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
        // A quarantined batch keeps its name: never reuse it.
        for (String name : quarantine.names()) {
            if (SEQUENCE.matcher(name).matches()) {
                highest = Math.max(highest, Long.parseLong(name));
            }
        }
        nextSequence = highest + 1;
        if (temps > 0) {
            DurableFiles.fsyncDirectory(directory);
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
            DurableFiles.write(batchFile(directory, seq), encoded.header().duplicate(),
                    ByteBuffer.wrap(encoded.payload()), encoded.trailer().duplicate());
            DurableFiles.fsyncDirectory(directory);
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
            DurableFiles.fsyncDirectory(directory);
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
        DurableFiles.fsyncDirectory(directory);
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
        quarantine.moveIn(String.format("%020d", sequence), batchFile(directory, sequence), e.bytes(), reason);
    }

    public synchronized SpoolStats stats() {
        long age = queue.isEmpty() ? 0 : Math.max(0, nanoTime.getAsLong() - queue.firstEntry().getValue().spooledAtNanos());
        QuarantineStore.Stats q = quarantine.stats();
        return new SpoolStats(queue.size(), bytes, age, droppedBatches, droppedBytes, q.added(), q.bytes());
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

    @Override
    public String toString() {
        return "Spool[" + directory + ", max " + maxBytes + " bytes]";
    }
}
