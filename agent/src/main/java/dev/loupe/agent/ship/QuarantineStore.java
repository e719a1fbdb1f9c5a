package dev.loupe.agent.ship;

import dev.loupe.agent.files.DurableFiles;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * A bounded folder of what a remote end refused for good, each entry kept beside its reason:
 * {@code <name><payload suffix>} (the refused bytes) and {@code <name>.reason}. The spool keeps its
 * sink's rejected batches in one ({@code quarantine/}), {@code loupe relay} the records Parca rejects.
 *
 * <p>Both files are on disk (temp file, fsync, rename, fsync of the folder) before an add returns. Past
 * {@code maxBytes} the oldest entries are deleted, never the one just added; they are counted and logged.
 * A cap of 0 keeps nothing: the refused bytes are deleted (logged, and counted as added). At open, temp
 * files left by a crash are removed and the entries found are ordered oldest first by modification time.
 * Only files ending in the payload suffix or {@code .reason} are the store's: anything else in the folder
 * is neither counted nor deleted. Thread-safe.
 */
public final class QuarantineStore {
    private static final System.Logger LOG = System.getLogger(QuarantineStore.class.getName());
    private static final String REASON = ".reason";
    /** Kafka's topic characters: a relay entry is {@code <topic>-<partition>-<offset>}. */
    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9._-]+");

    /**
     * @param entries        entries kept now
     * @param bytes          their size on disk, reasons included
     * @param added          entries added since open (also those a cap of 0 deleted at once)
     * @param evictedEntries entries deleted since open to stay within the cap
     * @param evictedBytes   their size
     */
    public record Stats(long entries, long bytes, long added, long evictedEntries, long evictedBytes) {}

    private final Path directory;
    private final long maxBytes;
    private final String payloadSuffix;
    private final String owner;

    // Guarded by this. Entry name → its bytes on disk, oldest first.
    private final LinkedHashMap<String, Long> entries = new LinkedHashMap<>();
    private long bytes;
    private long added;
    private long evictedEntries;
    private long evictedBytes;

    private QuarantineStore(Path directory, long maxBytes, String payloadSuffix, String owner) {
        this.directory = directory;
        this.maxBytes = maxBytes;
        this.payloadSuffix = payloadSuffix;
        this.owner = owner;
    }

    /**
     * Opens (creating it, owner-only, if needed) the store in {@code directory}.
     *
     * @param payloadSuffix how the payload files end, with the dot (".batch")
     * @param owner         who the log lines are about ("spool parca", "relay")
     */
    public static QuarantineStore open(Path directory, long maxBytes, String payloadSuffix, String owner) throws IOException {
        if (maxBytes < 0) {
            throw new IllegalArgumentException(owner + ": quarantine max bytes must be >= 0 (got " + maxBytes + ")");
        }
        if (!payloadSuffix.startsWith(".") || payloadSuffix.equals(REASON) || payloadSuffix.equals(DurableFiles.TEMP_SUFFIX)) {
            throw new IllegalArgumentException("quarantine payload suffix \"" + payloadSuffix + "\"");
        }
        DurableFiles.createPrivateDirectories(directory);
        QuarantineStore store = new QuarantineStore(directory, maxBytes, payloadSuffix, owner);
        store.recover();
        return store;
    }

    private record Found(String name, long bytes, long modifiedMillis) {}

    private synchronized void recover() throws IOException {
        Map<String, Found> found = new HashMap<>();
        int temps = 0;
        try (DirectoryStream<Path> files = Files.newDirectoryStream(directory)) {
            for (Path f : files) {
                String file = f.getFileName().toString();
                if (file.endsWith(DurableFiles.TEMP_SUFFIX)) {
                    if (entryName(file.substring(0, file.length() - DurableFiles.TEMP_SUFFIX.length())) != null) {
                        Files.deleteIfExists(f);
                        temps++;
                    }
                    continue;
                }
                String name = entryName(file);
                if (name == null) {
                    continue;
                }
                BasicFileAttributes a = Files.readAttributes(f, BasicFileAttributes.class);
                Found one = new Found(name, a.size(), a.lastModifiedTime().toMillis());
                found.merge(name, one, (x, y) -> new Found(name, x.bytes() + y.bytes(),
                        Math.max(x.modifiedMillis(), y.modifiedMillis())));
            }
        }
        found.values().stream()
                .sorted(Comparator.comparingLong(Found::modifiedMillis).thenComparing(Found::name))
                .forEach(e -> {
                    entries.put(e.name(), e.bytes());
                    bytes += e.bytes();
                });
        if (temps > 0) {
            DurableFiles.fsyncDirectory(directory);
            LOG.log(System.Logger.Level.INFO, owner + ": removed " + temps + " unfinished temp file(s) of the quarantine "
                    + directory + " left by an earlier run");
        }
    }

    /** The entry a file of the store belongs to, or null if the file is not the store's. */
    private String entryName(String file) {
        String name = file.endsWith(payloadSuffix) ? file.substring(0, file.length() - payloadSuffix.length())
                : file.endsWith(REASON) ? file.substring(0, file.length() - REASON.length()) : null;
        return name != null && NAME.matcher(name).matches() ? name : null;
    }

    public Path directory() {
        return directory;
    }

    /** Keeps {@code content} as {@code <name><payload suffix>} beside the reason; an entry of the same name is replaced. */
    public void write(String name, byte[] content, String reason) throws IOException {
        add(name, reason, new Payload() {
            @Override
            public long store(Path target) throws IOException {
                DurableFiles.write(target, ByteBuffer.wrap(content));
                return content.length;
            }

            @Override
            public void discard() {}
        });
    }

    /**
     * Moves {@code file} (of {@code size} bytes) in as {@code <name><payload suffix>} beside the reason, and
     * makes its leaving its folder durable too. A file that is gone already leaves the reason alone.
     */
    void moveIn(String name, Path file, long size, String reason) throws IOException {
        add(name, reason, new Payload() {
            @Override
            public long store(Path target) throws IOException {
                try {
                    DurableFiles.moveAtomically(file, target);
                } catch (NoSuchFileException gone) {
                    return 0;
                }
                DurableFiles.fsyncDirectory(file.getParent());
                return size;
            }

            @Override
            public void discard() throws IOException {
                Files.deleteIfExists(file);
                DurableFiles.fsyncDirectory(file.getParent());
            }
        });
    }

    private interface Payload {
        /** Puts the payload at {@code target}; returns its size. */
        long store(Path target) throws IOException;

        /** The cap is 0: the payload is not kept. */
        void discard() throws IOException;
    }

    private synchronized void add(String name, String reason, Payload payload) throws IOException {
        if (!NAME.matcher(name).matches()) {
            throw new IllegalArgumentException(owner + ": quarantine entry name \"" + name + "\" must match " + NAME);
        }
        added++;
        if (maxBytes == 0) {
            payload.discard();
            LOG.log(System.Logger.Level.WARNING, owner + ": deleted rejected " + name
                    + " (quarantine disabled): " + reason);
            return;
        }
        byte[] text = (reason + "\n").getBytes(StandardCharsets.UTF_8);
        DurableFiles.write(directory.resolve(name + REASON), ByteBuffer.wrap(text));
        long size = payload.store(directory.resolve(name + payloadSuffix)) + text.length;
        DurableFiles.fsyncDirectory(directory);
        Long replaced = entries.remove(name);
        if (replaced != null) {
            bytes -= replaced;
        }
        entries.put(name, size);
        bytes += size;
        evictOldestBut(name);
    }

    /** Deletes the oldest entries other than {@code keep} until the store is within its cap. */
    private void evictOldestBut(String keep) throws IOException {
        long count = 0;
        long freed = 0;
        Iterator<Map.Entry<String, Long>> oldestFirst = entries.entrySet().iterator();
        while (bytes > maxBytes && oldestFirst.hasNext()) {
            Map.Entry<String, Long> e = oldestFirst.next();
            if (e.getKey().equals(keep)) {
                continue;
            }
            oldestFirst.remove();
            bytes -= e.getValue();
            count++;
            freed += e.getValue();
            Files.deleteIfExists(directory.resolve(e.getKey() + payloadSuffix));
            Files.deleteIfExists(directory.resolve(e.getKey() + REASON));
        }
        if (count > 0) {
            DurableFiles.fsyncDirectory(directory);
            evictedEntries += count;
            evictedBytes += freed;
            LOG.log(System.Logger.Level.WARNING, owner + ": quarantine full (max " + maxBytes + " bytes): deleted the "
                    + count + " oldest rejected entr" + (count == 1 ? "y" : "ies") + ", " + freed
                    + " bytes (deleted since start: " + evictedEntries + ", " + evictedBytes + " bytes)");
        }
    }

    /** Entry names, oldest first. */
    synchronized List<String> names() {
        return List.copyOf(entries.keySet());
    }

    public synchronized Stats stats() {
        return new Stats(entries.size(), bytes, added, evictedEntries, evictedBytes);
    }

    @Override
    public String toString() {
        return "QuarantineStore[" + directory + ", max " + maxBytes + " bytes]";
    }
}
