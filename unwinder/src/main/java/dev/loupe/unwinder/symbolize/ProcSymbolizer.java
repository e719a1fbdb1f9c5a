package dev.loupe.unwinder.symbolize;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.Ticker;
import dev.loupe.unwinder.elf.ElfException;
import dev.loupe.unwinder.elf.ElfFile;
import dev.loupe.unwinder.elf.SymbolTable;
import dev.loupe.unwinder.proc.MapEntry;
import dev.loupe.unwinder.proc.ProcMaps;
import dev.loupe.unwinder.proc.ProcessRegistry;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * Symbolizes from /proc: per-process executable mappings, binaries opened through
 * /proc/PID/map_files (deleted files) or /proc/PID/root (containers), symbol tables cached by file
 * identity with a byte bound, kallsyms for the kernel and the vdso read from our own memory.
 *
 * <p>Threading: symbolize* run on one thread (the poll thread); the counters and Caffeine caches that
 * {@link #stats()} reads are safe to read from any thread.
 *
 * <p>Memory: the binary cache is bounded by weight, but a cached process state also holds its binaries;
 * an evicted binary stays reachable until that state's next refresh ({@link #REFRESH_NANOS}).
 */
final class ProcSymbolizer implements Symbolizer {
    private static final System.Logger LOG = System.getLogger(ProcSymbolizer.class.getName());
    /**
     * Misses alone re-read maps rarely: frame-pointer chains through code without frame pointers yield
     * garbage addresses all the time (re-reading on each cost ~1.5% of a core). PID reuse is caught
     * exactly by the start time instead. Also the retry interval for unreadable processes.
     */
    static final long MISS_REREAD_NANOS = Duration.ofSeconds(2).toNanos();
    /**
     * Except once, this soon after a read: a process first read between fork and exec (same pid and start
     * time, the parent's mappings) must resolve within its first moments, not 2 s later; a short-lived
     * process would never resolve.
     */
    static final long QUICK_REREAD_NANOS = Duration.ofMillis(100).toNanos();
    /** Maps are re-read this often anyway (dlopen, exec). */
    static final long REFRESH_NANOS = Duration.ofSeconds(15).toNanos();
    static final Duration PROCESS_IDLE_EXPIRY = Duration.ofSeconds(60);
    private static final long PROCESS_IDLE_NANOS = PROCESS_IDLE_EXPIRY.toNanos();
    private static final long SWEEP_NANOS = Duration.ofSeconds(10).toNanos();
    /** /proc/PID/stat counts start time in clock ticks (USER_HZ = 100 on every x86-64 kernel). */
    static final long NANOS_PER_TICK = 10_000_000L;
    private static final long KALLSYMS_RELOAD_NANOS = Duration.ofMinutes(2).toNanos();
    private static final Path HOST_DEBUG_DIR = Path.of("/usr/lib/debug/.build-id");

    /**
     * A parsed binary, or why it could not be parsed (cached too, so a bad file is read and logged once).
     * {@code elf} maps file offsets to link-time addresses; {@code symbols} may come from a debug file.
     */
    sealed interface Binary {
        /** Parsed: {@code elf} maps file offsets to link-time addresses; {@code symbols} may come from a debug file. */
        record Loaded(SymbolTable symbols, ElfFile elf, String buildId) implements Binary {}

        /** Not usable, and why (cached too, so a bad file is read and logged once). */
        record Failed(String reason) implements Binary {}

        default long weight() {
            return switch (this) {
                case Loaded l -> 1024 + l.symbols().memoryFootprintBytes();
                case Failed f -> 256;
            };
        }

        default boolean hasFunctions() {
            return this instanceof Loaded l && l.symbols().size() > 0;
        }

        default String buildId() {
            return this instanceof Loaded l ? l.buildId() : null;
        }
    }

    /** A file's identity: the maps line's device and inode, plus size and mtime (rewritten in place). */
    record FileKey(int devMajor, int devMinor, long inode, long size, long mtimeMillis) {}

    private static final Binary ANONYMOUS = new Binary.Failed("anonymous");
    private static final Binary UNREADABLE = new Binary.Failed("unreadable");

    /**
     * A process's executable mappings, sorted by start, with each mapping's binary and MappingRef resolved
     * on first use (the same MappingRef instance for every frame, so consumers can cache by identity).
     * {@code readable == false}: /proc could not be read; retried after {@link #MISS_REREAD_NANOS}.
     */
    static final class ProcessState {
        final long startTime;
        final boolean readable;
        final MapEntry[] mappings;
        final long[] starts;
        final Binary[] binaries;
        final MappingRef[] refs;
        long readAtNanos;
        /** Last lookup (racy writes from several threads are fine: any recent time keeps it alive). */
        volatile long accessedAtNanos;
        long lastMissReadNanos;
        /** The one early re-read on a miss (QUICK_REREAD_NANOS after the read) is still available. */
        boolean quickRereadLeft = true;
        /** When a re-read last found another start time than a sample's (0: never). */
        long mismatchAtNanos;
        boolean failureLogged;

        ProcessState(long startTime, List<MapEntry> exec, long now, ProcessState previous) {
            this.startTime = startTime;
            this.readable = true;
            this.mappings = exec.toArray(new MapEntry[0]);
            java.util.Arrays.sort(mappings, (a, b) -> Long.compareUnsigned(a.start(), b.start()));
            this.starts = new long[mappings.length];
            for (int i = 0; i < mappings.length; i++) {
                starts[i] = mappings[i].start();
            }
            this.binaries = new Binary[mappings.length];
            this.refs = new MappingRef[mappings.length];
            this.readAtNanos = now;
            this.lastMissReadNanos = now;
            if (previous != null && previous.readable && previous.startTime == startTime) {
                // A refresh of the same process: unchanged mappings keep their binary and MappingRef
                // (consumers key mapping ids by MappingRef identity).
                for (int i = 0; i < mappings.length; i++) {
                    int j = previous.find(starts[i]);
                    if (j >= 0 && previous.mappings[j].equals(mappings[i]) && previous.binaries[j] != null
                            && previous.binaries[j] != UNREADABLE) {
                        binaries[i] = previous.binaries[j];
                        refs[i] = previous.refs[j];
                    }
                }
            }
        }

        /** An unreadable process. */
        ProcessState(long now) {
            this.startTime = -1;
            this.readable = false;
            this.mappings = new MapEntry[0];
            this.starts = new long[0];
            this.binaries = new Binary[0];
            this.refs = new MappingRef[0];
            this.readAtNanos = now;
            this.lastMissReadNanos = now;
        }

        /** Index of the mapping containing addr, or -1 (unsigned: [vsyscall] sits at the top). */
        int find(long addr) {
            int lo = 0;
            int hi = starts.length - 1;
            while (lo <= hi) {
                int mid = (lo + hi) >>> 1;
                if (Long.compareUnsigned(starts[mid], addr) <= 0) {
                    lo = mid + 1;
                } else {
                    hi = mid - 1;
                }
            }
            return hi >= 0 && Long.compareUnsigned(addr, mappings[hi].end()) < 0 ? hi : -1;
        }
    }

    private final Path procRoot;
    private final Path kallsymsPath;
    private final LongSupplier nanoTime;
    private final ProcessRegistry registry;
    private final long maxCacheBytes;
    /*
     * Process states by pid, dropped after PROCESS_IDLE_EXPIRY without a lookup. A plain map with our own
     * idle sweep, not a Caffeine cache: the sampling thread looks a process up for every sample, and
     * Caffeine's per-read bookkeeping (ticker, read buffer, maintenance) was ~30 % of that thread's CPU in
     * the C1-compiled agent, for an expiry policy this simple.
     */
    private final java.util.concurrent.ConcurrentHashMap<Integer, ProcessState> processes =
            new java.util.concurrent.ConcurrentHashMap<>();
    private volatile long lastSweepNanos;
    private final Cache<FileKey, Binary> binaries;
    /** Files already warned about: a bad file is logged once even if its cache entry is evicted. */
    private final Cache<FileKey, Boolean> warnedFiles = Caffeine.newBuilder().executor(Runnable::run).maximumSize(4096).build();
    private final AtomicLong frames = new AtomicLong();
    private final AtomicLong unresolved = new AtomicLong();
    private final AtomicLong binaryFailures = new AtomicLong();
    private final AtomicLong unreadableBinaries = new AtomicLong();
    private final AtomicLong mapsReads = new AtomicLong();
    private final AtomicLong mapsReadFailures = new AtomicLong();
    private final AtomicLong malformedMapsLines = new AtomicLong();
    private final AtomicLong pidReuses = new AtomicLong();
    private final AtomicLong debugFiles = new AtomicLong();
    private volatile KernelSymbols kernel;
    private long kernelLoadedAt = Long.MIN_VALUE;
    private boolean kernelWarned;
    private final Map<Long, Binary> vdsoBySize = new HashMap<>(); // by mapping size: 64-bit and 32-bit vdso differ
    private boolean internalErrorLogged;

    ProcSymbolizer(Options o, ProcessRegistry registry) {
        this.procRoot = o.procRoot();
        this.kallsymsPath = o.kallsyms();
        this.nanoTime = o.nanoTime();
        this.registry = registry;
        this.maxCacheBytes = o.maxCacheBytes();
        Ticker ticker = this::nowNanos;
        // Maintenance (expiry, eviction) runs on the calling thread: it is small, and the default executor
        // wakes a ForkJoinPool worker for it.
        this.lastSweepNanos = nowNanos();
        this.binaries = Caffeine.newBuilder().executor(Runnable::run).ticker(ticker).maximumWeight(o.maxCacheBytes())
                .weigher((FileKey k, Binary b) -> (int) Math.min(Integer.MAX_VALUE, b.weight()))
                .expireAfterAccess(Duration.ofMinutes(10)).build();
    }

    /** Monotonic: refresh, rate limits and cache expiry never follow a wall-clock step. */
    private long nowNanos() {
        return nanoTime.getAsLong();
    }

    // ---------------- user space ----------------

    @Override
    public void symbolizeUser(int pid, long processStartNs, long[] addrs, int count, List<Frame> out) {
        int n = Math.max(0, Math.min(count, addrs.length));
        int base = out.size();
        try {
            long startTicks = processStartNs > 0 ? processStartNs / NANOS_PER_TICK : -1;
            ProcessState proc = process(pid, startTicks);
            for (int i = 0; i < n; i++) {
                long addr = i == 0 ? addrs[i] : addrs[i] - 1; // return address -> inside the call
                int m = proc == null ? -1 : proc.find(addr);
                if (m < 0 && proc != null) {
                    proc = rereadOnMiss(pid, proc, startTicks);
                    m = proc.find(addr);
                }
                Frame f = m < 0 ? new Frame(addr, null, null, false) : resolve(pid, proc, m, addr);
                if (f.function() == null) {
                    unresolved.incrementAndGet();
                }
                out.add(f);
            }
            frames.addAndGet(n);
        } catch (RuntimeException e) {
            // A bug, not bad input (that is handled above): keep every frame as an address, say so once.
            bareFrames(e, addrs, n, out, base, false);
        }
    }

    private void bareFrames(RuntimeException e, long[] addrs, int n, List<Frame> out, int base, boolean kernel) {
        out.subList(base, out.size()).clear();
        for (int i = 0; i < n; i++) {
            out.add(new Frame(i == 0 ? addrs[i] : addrs[i] - 1, null, null, kernel));
        }
        frames.addAndGet(n);
        unresolved.addAndGet(n);
        if (!internalErrorLogged) {
            internalErrorLogged = true;
            LOG.log(System.Logger.Level.WARNING, "symbolizer failed; frames kept as addresses", e);
        }
    }

    private Frame resolve(int pid, ProcessState proc, int idx, long addr) {
        MapEntry m = proc.mappings[idx];
        Binary bin = proc.binaries[idx];
        if (bin == null) {
            bin = binary(pid, m);
            proc.binaries[idx] = bin;
            proc.refs[idx] = new MappingRef(m.start(), m.end(), m.offset(), m.path(), bin.buildId(), bin.hasFunctions());
        }
        String fn = null;
        if (bin instanceof Binary.Loaded l) {
            long vaddr = l.elf().fileOffsetToVaddr(addr - m.start() + m.offset());
            if (vaddr != -1) {
                fn = l.symbols().lookup(vaddr);
            }
        }
        return new Frame(addr, proc.refs[idx], fn, false);
    }

    /**
     * The process's cached state, re-read when it is old or when the sample's start time says the pid now
     * belongs to another process. Returns null rather than another process's mappings.
     */
    private ProcessState process(int pid, long startTicks) {
        long now = nowNanos();
        ProcessState p = cachedProcess(pid, now);
        if (p != null) {
            boolean reused = p.readable && startTicks >= 0 && p.startTime != startTicks;
            if (p.readable && !reused && now - p.readAtNanos < REFRESH_NANOS) {
                return p;
            }
            if (!p.readable && now - p.readAtNanos < MISS_REREAD_NANOS) {
                return null; // unreadable lately: do not hit /proc on every sample
            }
            if (reused && p.mismatchAtNanos != 0 && now - p.mismatchAtNanos < MISS_REREAD_NANOS) {
                return null; // re-read lately and still another process: the sample's process is gone
            }
        }
        ProcessState fresh = readProcess(pid, now, p);
        if (fresh != null) {
            if (p != null && p.readable && fresh.startTime != p.startTime) {
                pidReuses.incrementAndGet();
                LOG.log(System.Logger.Level.DEBUG, () -> "pid " + pid + " now belongs to a new process");
            }
            putProcess(pid, fresh, now);
            p = fresh;
        } else if (p != null && p.readable) {
            p.readAtNanos = now; // gone: keep what we knew so late samples still resolve
        } else {
            ProcessState gone = new ProcessState(now);
            gone.failureLogged = true; // readProcess logged it (once per pid)
            putProcess(pid, gone, now);
            return null;
        }
        if (startTicks >= 0 && p.startTime != startTicks) {
            p.mismatchAtNanos = now;
            return null;
        }
        return p;
    }

    /** The state of {@code pid}, or null; a state idle for PROCESS_IDLE_EXPIRY is gone. Sweeps every 10 s. */
    private ProcessState cachedProcess(int pid, long now) {
        ProcessState p = processes.get(pid);
        if (p != null) {
            if (now - p.accessedAtNanos >= PROCESS_IDLE_NANOS) {
                processes.remove(pid, p);
                p = null;
            } else {
                p.accessedAtNanos = now;
            }
        }
        if (now - lastSweepNanos >= SWEEP_NANOS) {
            lastSweepNanos = now;
            processes.values().removeIf(s -> now - s.accessedAtNanos >= PROCESS_IDLE_NANOS);
        }
        return p;
    }

    private void putProcess(int pid, ProcessState p, long now) {
        p.accessedAtNanos = now;
        processes.put(pid, p);
    }

    /** An address outside every known mapping: dlopen, exec, or a new process with a reused pid. */
    private ProcessState rereadOnMiss(int pid, ProcessState p, long startTicks) {
        long now = nowNanos();
        boolean quick = p.quickRereadLeft && now - p.readAtNanos >= QUICK_REREAD_NANOS;
        if (!quick && now - p.lastMissReadNanos < MISS_REREAD_NANOS) {
            return p;
        }
        p.lastMissReadNanos = now;
        p.quickRereadLeft = false;
        ProcessState fresh = readProcess(pid, now, p);
        if (fresh == null) {
            return p;
        }
        fresh.quickRereadLeft = false; // one quick re-read per read from scratch, not a chain of them
        putProcess(pid, fresh, now);
        if (fresh.startTime != p.startTime) {
            pidReuses.incrementAndGet();
            LOG.log(System.Logger.Level.DEBUG, () -> "pid " + pid + " was reused by a new process");
            if (startTicks >= 0) {
                return p; // this sample belongs to the old process: never resolve it with the new one's maps
            }
        }
        return fresh;
    }

    private ProcessState readProcess(int pid, long now, ProcessState previous) {
        mapsReads.incrementAndGet();
        try {
            ProcessRegistry.Snapshot snap = registry.read(pid); // stat, maps, stat: consistent, shared
            malformedMapsLines.addAndGet(snap.malformedLines());
            return new ProcessState(snap.startTicks(), snap.executable(), now, previous);
        } catch (IOException | RuntimeException e) {
            mapsReadFailures.incrementAndGet();
            if (previous == null || !previous.failureLogged) {
                if (previous != null) {
                    previous.failureLogged = true;
                }
                LOG.log(System.Logger.Level.DEBUG, () -> "cannot read /proc/" + pid + " (process gone or no permission): "
                        + e + "; its frames stay addresses");
            }
            return null;
        }
    }

    private Binary binary(int pid, MapEntry m) {
        if (m.path().equals("[vdso]")) {
            return vdso(pid, m);
        }
        if (!m.fileBacked()) {
            return ANONYMOUS;
        }
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
                return ANONYMOUS; // a device or the like mapped executable: nothing to read symbols from
            }
            FileKey key = new FileKey(m.devMajor(), m.devMinor(), m.inode(), a.size(), a.lastModifiedTime().toMillis());
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
        unreadableBinaries.incrementAndGet();
        String err = lastError;
        LOG.log(System.Logger.Level.DEBUG, () -> "cannot open " + m.path() + " of pid " + pid + ": " + err);
        return UNREADABLE;
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
            SymbolTable debug = debugSymbols(pid, buildId);
            if (debug != null && debug.size() > 0) {
                symbols = debug;
                stripped = false;
            }
        }
        if (stripped) {
            symbols = StrippedGoSymbols.orElse(file, elf, symbols, maxCacheBytes);
        }
        return new Binary.Loaded(symbols, elf, buildId);
    }

    /**
     * A stripped binary's full symbol table from its separate debug file (/usr/lib/debug/.build-id/xx/
     * rest.debug, in the process's root first, then ours), which names the static functions that
     * .dynsym lacks. Its build id must match. Null if there is none.
     */
    private SymbolTable debugSymbols(int pid, String buildId) {
        if (buildId.length() < 3) {
            return null;
        }
        String rel = buildId.substring(0, 2) + "/" + buildId.substring(2) + ".debug";
        Path inRoot = procRoot.resolve(Integer.toString(pid)).resolve("root/usr/lib/debug/.build-id").resolve(rel);
        for (Path p : List.of(inRoot, HOST_DEBUG_DIR.resolve(rel))) {
            if (!Files.isRegularFile(p)) {
                continue;
            }
            try {
                ElfFile d = ElfFile.open(p, maxCacheBytes);
                if (d.buildId().filter(buildId::equals).isPresent()) {
                    debugFiles.incrementAndGet();
                    return d.symbols();
                }
            } catch (ElfException | IOException | RuntimeException e) {
                LOG.log(System.Logger.Level.DEBUG, () -> "ignoring debug file " + p + ": " + e.getMessage());
            }
        }
        return null;
    }

    private Binary failed(int pid, String path, FileKey key, String problem) {
        binaryFailures.incrementAndGet();
        if (key == null || warnedFiles.asMap().putIfAbsent(key, Boolean.TRUE) == null) {
            LOG.log(System.Logger.Level.WARNING, "cannot symbolize " + path + " (pid " + pid + "): " + problem
                    + "; its frames stay addresses");
        }
        return new Binary.Failed(problem);
    }

    /** The ElfException's message without the "/proc/PID/map_files/...: " prefix naming our read path. */
    private static String problem(ElfException e, Object source) {
        String msg = String.valueOf(e.getMessage());
        String prefix = source + ": ";
        return msg.startsWith(prefix) ? msg.substring(prefix.length()) : msg;
    }

    /**
     * The vdso is the same image in every process of a kernel (per ABI): read it from our own memory once,
     * or from the target's memory when its [vdso] has another size (a 32-bit process).
     */
    private Binary vdso(int pid, MapEntry m) {
        long size = m.end() - m.start();
        Binary b = vdsoBySize.get(size);
        if (b == null) {
            b = readVdso(pid, m);
            vdsoBySize.put(size, b);
        }
        return b;
    }

    private Binary readVdso(int pid, MapEntry target) {
        long size = target.end() - target.start();
        String lastError = "no readable [vdso]";
        List<Path> selves = List.of(Path.of("/proc/self"), procRoot.resolve("self"));
        for (Path self : selves) {
            try {
                MapEntry own = null;
                for (MapEntry e : ProcMaps.parse(ProcMaps.readText(self.resolve("maps")))) {
                    if (e.path().equals("[vdso]")) {
                        own = e;
                    }
                }
                if (own != null && own.end() - own.start() == size) {
                    return parseVdso(self.resolve("mem"), own.start(), size);
                }
            } catch (IOException | ElfException | RuntimeException e) {
                lastError = String.valueOf(e.getMessage());
            }
        }
        try {
            return parseVdso(procRoot.resolve(Integer.toString(pid)).resolve("mem"), target.start(), size);
        } catch (IOException | ElfException | RuntimeException e) {
            lastError = String.valueOf(e.getMessage());
        }
        LOG.log(System.Logger.Level.WARNING, "cannot read the vdso (" + size + " bytes): " + lastError
                + "; vdso frames stay addresses");
        binaryFailures.incrementAndGet();
        return new Binary.Failed(lastError);
    }

    private static Binary parseVdso(Path mem, long start, long size) throws IOException, ElfException {
        if (size <= 0 || size > 1 << 20) {
            throw new IOException("implausible [vdso] size " + size);
        }
        byte[] image = new byte[(int) size];
        try (RandomAccessFile f = new RandomAccessFile(mem.toFile(), "r")) {
            f.seek(start);
            f.readFully(image);
        }
        ElfFile elf = ElfFile.parse("[vdso]", ByteBuffer.wrap(image));
        return new Binary.Loaded(elf.symbols(), elf, elf.buildId().orElse(null));
    }

    // ---------------- kernel ----------------

    @Override
    public void symbolizeKernel(long[] addrs, int count, List<Frame> out) {
        int n = Math.max(0, Math.min(count, addrs.length));
        int base = out.size();
        try {
            KernelSymbols k = kernel(false);
            for (int i = 0; i < n; i++) {
                long addr = i == 0 ? addrs[i] : addrs[i] - 1; // return addresses, as in user space
                if (k != null && !k.covers(addr)) {
                    k = kernel(true); // a module loaded since we read kallsyms?
                }
                String fn = k != null && k.covers(addr) ? k.table.lookup(addr) : null;
                if (fn == null) {
                    unresolved.incrementAndGet();
                }
                out.add(new Frame(addr, k == null ? null : k.ref, fn, true));
            }
            frames.addAndGet(n);
        } catch (RuntimeException e) {
            bareFrames(e, addrs, n, out, base, true);
        }
    }

    /** kallsyms, read at first use and again (at most every 2 min) when an address falls outside it. */
    private KernelSymbols kernel(boolean missed) {
        long now = nowNanos();
        KernelSymbols k = kernel;
        boolean due = kernelLoadedAt == Long.MIN_VALUE || (k == null || missed) && now - kernelLoadedAt > KALLSYMS_RELOAD_NANOS;
        if (due) {
            kernelLoadedAt = now;
            try {
                // Same range as before: keep the MappingRef instance (consumers key mappings by identity).
                KernelSymbols fresh = KernelSymbols.load(kallsymsPath).keepingRef(k);
                if (fresh.restricted && !kernelWarned) {
                    kernelWarned = true;
                    LOG.log(System.Logger.Level.WARNING, kallsymsPath + " shows only zero addresses (kptr_restrict;"
                            + " needs root or CAP_SYSLOG): kernel frames stay addresses");
                }
                kernel = fresh;
                k = fresh;
            } catch (IOException | RuntimeException e) {
                if (!kernelWarned) {
                    kernelWarned = true;
                    LOG.log(System.Logger.Level.WARNING, "cannot read " + kallsymsPath + ": " + e + "; kernel frames stay addresses");
                }
            }
        }
        return k;
    }

    @Override
    public Stats stats() {
        KernelSymbols k = kernel;
        long weight = binaries.policy().eviction().map(e -> e.weightedSize().orElse(0)).orElse(0L);
        return new Stats(processes.size(), binaries.estimatedSize(), binaryFailures.get(), unresolved.get(),
                mapsReads.get(), mapsReadFailures.get(), k == null ? 0 : k.table.size(), frames.get(), weight,
                unreadableBinaries.get(), malformedMapsLines.get(), pidReuses.get(), debugFiles.get());
    }

    @Override
    public void close() {
        processes.clear();
        binaries.invalidateAll();
    }
}
