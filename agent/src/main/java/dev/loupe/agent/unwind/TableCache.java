package dev.loupe.agent.unwind;

import dev.loupe.unwinder.ehframe.StopReason;
import dev.loupe.unwinder.ehframe.UnwindTable;
import dev.loupe.unwinder.elf.ElfLoadSegments;
import dev.loupe.unwinder.proc.FileKey;
import dev.loupe.unwinder.proc.MapEntry;
import dev.loupe.unwinder.proc.Vdso;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * One table per binary (device + inode + size + mtime), shared by every process that maps it, and the
 * vdso's. A table is built when first needed and again after an eviction; only the table just built is
 * on the heap (until {@link #takeBuilt} hands it over), except the vdso's, which cannot be re-read from a
 * file. A runtime may give a file's table in place of its own ({@link FileTables}: an interpreter binary's, with its
 * loop's rows of the runtime's kind), built the same way and shared the same way.
 * Binaries without a usable table are remembered with the reason. Used on the uploader's thread;
 * the counters are also read by /metrics.
 */
final class TableCache {
    private static final System.Logger LOG = System.getLogger(TableCache.class.getName());

    /** The table a runtime walks one of its files with, in place of the file's own; null for the file's own. */
    @FunctionalInterface
    interface FileTables {
        UnwindTable replace(MapEntry m, Path file, UnwindTable own) throws IOException;

        FileTables NONE = (m, file, own) -> null;
    }

    private final UnwindTableUploader.TableBuilder builder;
    private final FileTables runtimeTables;
    private final Path procRoot;
    private final LongSupplier nanoTime;
    private final HeapTrimmer heapTrimmer;
    private final Map<Object, TableEntry> tables = new HashMap<>();
    private TableEntry vdso;
    // The table just built, handed to the kernel space without keeping every table on the heap.
    private UnwindTable built;
    private TableEntry builtFor;
    private final AtomicLong tablesBuilt = new AtomicLong();
    private final AtomicLong tableFailures = new AtomicLong();
    private final Map<String, AtomicLong> failuresByReason = new ConcurrentHashMap<>();

    TableCache(UnwindTableUploader.TableBuilder builder, Path procRoot, LongSupplier nanoTime, HeapTrimmer heapTrimmer) {
        this(builder, FileTables.NONE, procRoot, nanoTime, heapTrimmer);
    }

    TableCache(UnwindTableUploader.TableBuilder builder, FileTables runtimeTables, Path procRoot, LongSupplier nanoTime,
               HeapTrimmer heapTrimmer) {
        this.builder = builder;
        this.runtimeTables = runtimeTables;
        this.procRoot = procRoot;
        this.nanoTime = nanoTime;
        this.heapTrimmer = heapTrimmer;
    }

    /**
     * The table for one of {@code pid}'s executable mappings, built if it is not loaded; null for a mapping
     * walked with frame pointers (anonymous, JIT) or a file that cannot be read now.
     */
    TableEntry forMapping(int pid, MapEntry m) {
        if (m.path().equals("[vdso]")) {
            return vdso();
        }
        return m.fileBacked() ? fileTable(pid, m) : null;
    }

    private TableEntry fileTable(int pid, MapEntry m) {
        Path pidDir = procRoot.resolve(Integer.toString(pid));
        Path file = pidDir.resolve("map_files").resolve(m.mapFilesName());
        FileKey key;
        try {
            key = FileKey.of(m, Files.readAttributes(file, BasicFileAttributes.class)); // one stat: no exists() first
        } catch (IOException e) {
            file = pidDir.resolve("root").resolve(m.path().substring(1));
            try {
                key = FileKey.of(m, Files.readAttributes(file, BasicFileAttributes.class));
            } catch (IOException again) {
                return null; // unreadable now: frame pointers
            }
        }
        TableEntry t = tables.computeIfAbsent(key, k -> new TableEntry(k, m.path()));
        if (t.failure == null && !t.loaded() && builtFor != t) {
            // New, or evicted earlier: (re)compile it from the file. A file that cannot be opened now (the
            // process exited meanwhile) says nothing about the binary: not cached, frame pointers this time.
            if (!build(t, m, file, null)) {
                if (!t.loaded() && t.refs == 0) {
                    tables.remove(key);
                }
                return null;
            }
        }
        t.lastUsed = nanoTime.getAsLong();
        return t;
    }

    private TableEntry vdso() {
        if (vdso == null) {
            vdso = new TableEntry("[vdso]", "[vdso]");
            try {
                byte[] image = Vdso.ownImage();
                build(vdso, null, null, image);
            } catch (IOException e) {
                fail(vdso, StopReason.NO_TABLE, "cannot read the vdso: " + e.getMessage());
            }
        }
        return vdso;
    }

    /**
     * Builds (or rebuilds, after an eviction) a table; if the binary has none, the entry records why.
     * Returns false only if the file could not be read now (not a property of the binary).
     */
    private boolean build(TableEntry t, MapEntry m, Path file, byte[] image) {
        try {
            UnwindTable table;
            if (image != null) {
                table = builder.build(t.name, ByteBuffer.wrap(image));
                t.segments = ElfLoadSegments.parse(t.name, ByteBuffer.wrap(image));
                t.retained = table;
            } else {
                table = builder.build(file);
                t.segments = ElfLoadSegments.read(file);
                UnwindTable runtimes = runtimeTables.replace(m, file, table);
                t.runtimeTable = runtimes != null;
                if (runtimes != null) {
                    table = runtimes;
                }
            }
            t.pcBase = table.pcBase();
            t.pages = table.pageCount();
            t.rows = table.rowCount();
            t.rules = table.ruleCount();
            built = table;
            builtFor = t;
            tablesBuilt.incrementAndGet();
            heapTrimmer.burst();
        } catch (IOException e) {
            return false; // gone or unreadable right now: try again with the next process that maps it
        } catch (Exception e) {
            fail(t, StopReason.NO_TABLE, e.toString());
        }
        return true;
    }

    /** The contents of a table that is not loaded: the one just built, or the one kept (the vdso's). */
    UnwindTable takeBuilt(TableEntry t) {
        UnwindTable table = builtFor == t ? built : t.retained;
        if (table == null) {
            throw new IllegalStateException("no built table to upload for " + t.name);
        }
        built = null;
        builtFor = null;
        return table;
    }

    /** The binary has no usable table: its frames stop there (counted, by reason). */
    void fail(TableEntry t, StopReason reason, String message) {
        t.failure = reason;
        tableFailures.incrementAndGet();
        failuresByReason.computeIfAbsent(reason.text(), k -> new AtomicLong()).incrementAndGet();
        LOG.log(System.Logger.Level.INFO, "no unwind table for " + t.name + " (" + message + "); its frames stop there");
    }

    /** Counted and logged like {@link #fail}, but not a property of the binary: tried again with its next process. */
    void failForNow(TableEntry t, String message) {
        fail(t, StopReason.NO_TABLE, message);
        t.failure = null;
    }

    long tablesBuilt() {
        return tablesBuilt.get();
    }

    long tableFailures() {
        return tableFailures.get();
    }

    Map<String, Long> failuresByReason() {
        Map<String, Long> reasons = new HashMap<>();
        failuresByReason.forEach((k, v) -> reasons.put(k, v.get()));
        return reasons;
    }
}
