package dev.loupe.unwinder.symbolize;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import dev.loupe.unwinder.elf.ElfException;
import dev.loupe.unwinder.elf.ElfFile;
import dev.loupe.unwinder.elf.SymbolTable;
import dev.loupe.unwinder.proc.FileKey;
import dev.loupe.unwinder.proc.MapEntry;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * Mapped files' symbol tables, opened through /proc/PID/map_files (deleted files) or /proc/PID/root
 * (containers) and cached by file identity in a Caffeine cache bounded by bytes; a stripped binary's
 * symbols come from its debug file ({@link DebugSymbolFiles}) or, for Go, its pclntab. When a process has exited
 * (its files cannot be opened through /proc any more), a file some process mapped before is found by its device
 * and inode.
 *
 * <p>Threading: {@link #binary} runs on one thread; the counters and the cache's sizes may be read from any.
 */
final class BinaryCache {
    /** The symbolizer's logger: one logger name for all its messages. */
    private static final System.Logger LOG = System.getLogger(ProcSymbolizer.class.getName());

    private final Path procRoot;
    private final long maxCacheBytes;
    private final DebugSymbolFiles debugFiles;
    private final Cache<FileKey, Binary> binaries;
    /** Files already warned about: a bad file is logged once even if its cache entry is evicted. */
    private final Cache<FileKey, Boolean> warnedFiles = Caffeine.newBuilder().executor(Runnable::run).maximumSize(4096).build();
    /**
     * The last full key of each mapped file by its maps-line identity (device, inode): a process that exited before its
     * files could be opened still has its frames named by the binary another process mapped (its size and time can no
     * longer be checked; a file rewritten in place since would name them as the old content).
     */
    private final Cache<FileKey, Seen> byInode = Caffeine.newBuilder().executor(Runnable::run).maximumSize(4096).build();

    /** A file as last seen in a process's maps: its full key and the path it was mapped from. */
    private record Seen(FileKey key, String path, boolean deleted) {}

    /** A cached binary found by device and inode alone, with the path it was last mapped from. */
    record Known(Binary binary, String path) {}
    private final AtomicLong failures = new AtomicLong();
    private final AtomicLong unreadable = new AtomicLong();
    private final AtomicLong afterExit = new AtomicLong();
    private final AtomicLong ownRoot = new AtomicLong();

    /** {@code nanoTime}: the monotonic clock the cache expires entries by. */
    BinaryCache(Path procRoot, long maxCacheBytes, LongSupplier nanoTime, DebugSymbolFiles debugFiles) {
        this.procRoot = procRoot;
        this.maxCacheBytes = maxCacheBytes;
        this.debugFiles = debugFiles;
        // Maintenance (expiry, eviction) runs on the calling thread: it is small, and the default executor
        // wakes a ForkJoinPool worker for it.
        this.binaries = Caffeine.newBuilder().executor(Runnable::run).ticker(nanoTime::getAsLong).maximumWeight(maxCacheBytes)
                .weigher((FileKey k, Binary b) -> (int) Math.min(Integer.MAX_VALUE, b.weight()))
                .expireAfterAccess(Duration.ofMinutes(10)).build();
    }

    /** The binary of a file-backed mapping of {@code pid}. */
    Binary binary(int pid, MapEntry m) {
        Path pidDir = procRoot.resolve(Integer.toString(pid));
        // map_files names exactly the mapped file, even deleted or in another mount namespace. The root
        // fallback (no CAP_SYS_ADMIN for map_files) is by name, so never for a deleted file: the name
        // may now be another file.
        List<Path> candidates = new ArrayList<>(2);
        candidates.add(pidDir.resolve("map_files").resolve(m.mapFilesName()));
        if (!m.deleted()) {
            candidates.add(pidDir.resolve("root").resolve(m.path().substring(1)));
        }
        String lastError = "not found";
        for (Path p : candidates) {
            BasicFileAttributes a;
            try {
                a = Files.readAttributes(p, BasicFileAttributes.class);
            } catch (IOException | RuntimeException e) {
                lastError = e.toString();
                continue;
            }
            if (!a.isRegularFile()) {
                return Binary.ANONYMOUS; // a device or the like mapped executable: nothing to read symbols from
            }
            FileKey key = FileKey.of(m, a);
            byInode.put(inodeKey(m), new Seen(key, m.path(), m.deleted()));
            Binary b = binaries.getIfPresent(key);
            if (b != null) {
                return b;
            }
            b = load(pid, m, p, key);
            if (b != null) {
                binaries.put(key, b);
                return b;
            }
            lastError = "cannot open " + p;
        }
        // Not for a deleted file: its inode may since name another file, which no live process mapped to check.
        Binary own = m.deleted() ? null : inOwnRoot(pid, m);
        if (own != null) {
            return own;
        }
        Seen last = m.deleted() ? null : byInode.getIfPresent(inodeKey(m));
        Binary known = last == null ? null : binaries.getIfPresent(last.key());
        if (known != null) {
            afterExit.incrementAndGet();
            return known;
        }
        unreadable.incrementAndGet();
        String err = lastError;
        LOG.log(System.Logger.Level.DEBUG, () -> "cannot open " + m.path() + " of pid " + pid + ": " + err);
        return Binary.UNREADABLE;
    }

    /**
     * The mapped file read by its name in the agent's own root, when that name still is the file the process mapped
     * (the same device and inode, checked before and after reading it): a process that exited before the symbolizer
     * got to it (a churn's ls, 2 ms long) is named by the host's binary, and so is every later process of that binary
     * ({@link #known}) without any I/O. A file of another mount namespace (a container's) is some other file by that
     * name here, or none: null then.
     */
    private Binary inOwnRoot(int pid, MapEntry m) {
        Path own = procRoot.resolve("self").resolve("root").resolve(m.path().substring(1));
        BasicFileAttributes a = sameFile(own, m);
        if (a == null) {
            return null;
        }
        FileKey key = FileKey.of(m, a);
        Binary b = binaries.getIfPresent(key);
        if (b == null) {
            b = load(pid, m, own, key);
            if (b == null || sameFile(own, m) == null) {
                return null; // replaced while it was read
            }
            binaries.put(key, b);
        }
        byInode.put(inodeKey(m), new Seen(key, m.path(), false));
        ownRoot.incrementAndGet();
        return b;
    }

    /** {@code path}'s attributes if it is the regular file {@code m} maps (device and inode), else null. */
    private static BasicFileAttributes sameFile(Path path, MapEntry m) {
        try {
            Map<String, Object> id = Files.readAttributes(path, "unix:dev,ino,size,lastModifiedTime,isRegularFile");
            if (!Boolean.TRUE.equals(id.get("isRegularFile")) || ((Number) id.get("ino")).longValue() != m.inode()
                    || ((Number) id.get("dev")).longValue() != FileKey.device(m.devMajor(), m.devMinor())) {
                return null;
            }
            return Files.readAttributes(path, BasicFileAttributes.class);
        } catch (IOException | RuntimeException e) {
            return null; // none, unreadable, or no unix attribute view
        }
    }

    /**
     * Parses the mapped file. A defective file gives a failure entry (cached: it is read once and logged
     * once); a file we could not open (the process exited mid-read, permissions) gives null, not cached,
     * so other processes mapping the same file still resolve.
     */
    private Binary load(int pid, MapEntry m, Path file, FileKey key) {
        ElfFile elf;
        try {
            elf = ElfFile.open(file, maxCacheBytes);
        } catch (ElfException e) {
            return failed(pid, m.path(), key, problem(e, file));
        } catch (IOException | RuntimeException e) {
            return null;
        }
        SymbolTable symbols = elf.symbols();
        String buildId = elf.buildId().orElse(null);
        boolean stripped = !elf.hasSection(".symtab");
        if (buildId != null && stripped) {
            SymbolTable debug = debugFiles.symbols(pid, buildId);
            if (debug != null && debug.size() > 0) {
                symbols = debug;
                stripped = false;
            }
        }
        if (stripped) {
            symbols = StrippedGoSymbols.orElse(file, elf, symbols, maxCacheBytes);
        }
        return new Binary.Loaded(symbols, elf, buildId, LineTables.open(file, elf,
                procRoot.resolve(Integer.toString(pid)).resolve("root"), m.path(), buildId, symbols));
    }

    private Binary failed(int pid, String path, FileKey key, String problem) {
        failures.incrementAndGet();
        if (warnedFiles.asMap().putIfAbsent(key, Boolean.TRUE) == null) {
            LOG.log(System.Logger.Level.WARNING, "cannot symbolize " + path + " (pid " + pid + "): " + problem
                    + "; its frames stay addresses");
        }
        return new Binary.Failed(problem);
    }

    /** The ElfException's message without the "/proc/PID/map_files/...: " prefix naming our read path. */
    private static String problem(ElfException e, Path source) {
        String msg = String.valueOf(e.getMessage());
        String prefix = source + ": ";
        return msg.startsWith(prefix) ? msg.substring(prefix.length()) : msg;
    }

    private static FileKey inodeKey(MapEntry m) {
        return new FileKey(FileKey.device(m.devMajor(), m.devMinor()), m.inode(), -1, -1);
    }

    /**
     * The binary cached for the file with this device ({@code stat}'s encoding) and inode, as some process mapped it,
     * without any I/O; null if none is cached. (Its size and time cannot be checked here: a file rewritten in place
     * since the last process that mapped it was read would be named as the old content.)
     */
    Known known(long device, long inode) {
        Seen seen = byInode.getIfPresent(new FileKey(device, inode, -1, -1));
        // Not a deleted file: its inode may since name another file.
        Binary b = seen == null || seen.deleted() ? null : binaries.getIfPresent(seen.key());
        return b == null ? null : new Known(b, seen.path());
    }

    /** Mappings of processes whose files could not be opened any more, named by the binary cached for their inode. */
    long resolvedAfterExit() {
        return afterExit.get();
    }

    /** Mappings of processes whose files could not be opened through /proc, named by the same file in the agent's root. */
    long resolvedInOwnRoot() {
        return ownRoot.get();
    }

    /** Mapped files that are not usable ELF (each logged once). */
    long failures() {
        return failures.get();
    }

    /** Mapped files that could not be opened (process gone, permission). */
    long unreadable() {
        return unreadable.get();
    }

    /** Binaries in the cache, parse failures included. */
    long size() {
        return binaries.estimatedSize();
    }

    /** Estimated heap the cache holds. */
    long weight() {
        return binaries.policy().eviction().map(e -> e.weightedSize().orElse(0)).orElse(0L);
    }

    void clear() {
        binaries.invalidateAll();
    }
}
