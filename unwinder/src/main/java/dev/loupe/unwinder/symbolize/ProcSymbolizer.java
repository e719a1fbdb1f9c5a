package dev.loupe.unwinder.symbolize;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.Ticker;
import dev.loupe.unwinder.elf.ElfException;
import dev.loupe.unwinder.elf.ElfFile;
import dev.loupe.unwinder.elf.SymbolTable;
import dev.loupe.unwinder.proc.MapEntry;
import dev.loupe.unwinder.proc.ProcMaps;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Symbolizes from /proc: per-process executable mappings, binaries opened through
 * /proc/PID/map_files (deleted files) or /proc/PID/root (containers), symbol tables cached by file
 * identity with a byte bound, kallsyms for the kernel and the vdso read from our own memory.
 */
final class ProcSymbolizer implements Symbolizer {
    private static final System.Logger LOG = System.getLogger(ProcSymbolizer.class.getName());
    /**
     * Misses alone re-read maps rarely: frame-pointer chains through code without frame pointers yield
     * garbage addresses all the time. PID reuse is caught exactly by the start time instead.
     */
    static final long MISS_REREAD_NANOS = Duration.ofSeconds(2).toNanos();
    static final long REFRESH_NANOS = Duration.ofSeconds(15).toNanos();
    /** /proc/PID/stat counts start time in clock ticks (USER_HZ = 100). */
    static final long NANOS_PER_TICK = 10_000_000L;
    private static final long KALLSYMS_RELOAD_NANOS = Duration.ofMinutes(2).toNanos();

    /** A parsed binary, or why it could not be parsed (cached too, so a bad file is read once). */
    record Binary(SymbolTable symbols, ElfFile elf, String buildId, String error) {
        long weight() {
            return symbols == null ? 256 : 512 + symbols.memoryFootprintBytes();
        }
    }

    record FileKey(int devMajor, int devMinor, long inode, String path) {}

    /**
     * A process's executable mappings, sorted by start, with each mapping's binary and MappingRef resolved
     * once (the same MappingRef instance for every frame, so consumers can cache by identity).
     */
    static final class ProcessState {
        final long startTime;
        final MapEntry[] mappings;
        final long[] starts;
        final Binary[] binaries;
        final MappingRef[] refs;
        long readAtNanos;
        long lastMissReadNanos;
        /** When a re-read last found another start time than a sample's (0: never). */
        long mismatchAtNanos;

        ProcessState(long startTime, List<MapEntry> exec, long now) {
            this.startTime = startTime;
            this.mappings = exec.toArray(new MapEntry[0]);
            Arrays.sort(mappings, (a, b) -> Long.compareUnsigned(a.start(), b.start()));
            this.starts = new long[mappings.length];
            for (int i = 0; i < mappings.length; i++) {
                starts[i] = mappings[i].start();
            }
            this.binaries = new Binary[mappings.length];
            this.refs = new MappingRef[mappings.length];
            this.readAtNanos = now;
            this.lastMissReadNanos = now;
        }

        /** Index of the mapping containing addr, or -1. */
        int find(long addr) {
            int i = Arrays.binarySearch(starts, addr);
            if (i < 0) {
                i = -i - 2;
            }
            if (i >= 0 && Long.compareUnsigned(addr, mappings[i].end()) < 0) {
                return i;
            }
            return -1;
        }
    }

    private final Path procRoot;
    private final Path kallsymsPath;
    private final java.time.InstantSource clock;
    private final Cache<Integer, ProcessState> processes;
    private final Cache<FileKey, Binary> binaries;
    private final AtomicLong binaryFailures = new AtomicLong();
    private final AtomicLong unreadable = new AtomicLong();
    private final AtomicLong unresolved = new AtomicLong();
    private final AtomicLong mapsReads = new AtomicLong();
    private final AtomicLong mapsReadFailures = new AtomicLong();
    private KernelSymbols kernel;
    private long kernelLoadedAt = Long.MIN_VALUE;
    private boolean kernelWarned;
    private Binary vdso;
    private boolean vdsoTried;

    ProcSymbolizer(Options o) {
        this.procRoot = o.procRoot();
        this.kallsymsPath = o.kallsyms();
        this.clock = o.clock();
        Ticker ticker = this::nowNanos;
        this.processes = Caffeine.newBuilder().ticker(ticker).expireAfterAccess(Duration.ofSeconds(60)).build();
        this.binaries = Caffeine.newBuilder().ticker(ticker).maximumWeight(o.maxCacheBytes())
                .weigher((FileKey k, Binary b) -> (int) Math.min(Integer.MAX_VALUE, b.weight()))
                .expireAfterAccess(Duration.ofMinutes(10)).build();
    }

    private long nowNanos() {
        Instant i = clock.instant();
        return i.getEpochSecond() * 1_000_000_000L + i.getNano();
    }

    // ---------------- user space ----------------

    @Override
    public void symbolizeUser(int pid, long processStartNs, long[] addrs, int count, List<Frame> out) {
        ProcessState proc = process(pid, processStartNs > 0 ? processStartNs / NANOS_PER_TICK : -1);
        for (int i = 0; i < count; i++) {
            long addr = i == 0 ? addrs[i] : addrs[i] - 1; // return address -> inside the call
            int m = proc == null ? -1 : proc.find(addr);
            if (m < 0 && proc != null) {
                proc = rereadOnMiss(pid, proc);
                m = proc == null ? -1 : proc.find(addr);
            }
            if (m < 0) {
                unresolved.incrementAndGet();
                out.add(new Frame(addr, null, null, false));
                continue;
            }
            out.add(resolve(pid, proc, m, addr));
        }
    }

    private Frame resolve(int pid, ProcessState proc, int idx, long addr) {
        MapEntry m = proc.mappings[idx];
        Binary bin = proc.binaries[idx];
        if (bin == null) {
            bin = binary(pid, m);
            proc.binaries[idx] = bin;
            proc.refs[idx] = new MappingRef(m.start(), m.end(), m.offset(), m.path(), bin.buildId(),
                    bin.symbols() != null && bin.symbols().size() > 0);
        }
        long fileOffset = addr - m.start() + m.offset();
        String fn = null;
        if (bin.symbols() != null) {
            long vaddr = bin.elf().fileOffsetToVaddr(fileOffset);
            if (vaddr != -1) {
                fn = bin.symbols().lookup(vaddr);
            }
        }
        if (fn == null) {
            unresolved.incrementAndGet();
        }
        return new Frame(addr, proc.refs[idx], fn, false);
    }

    /**
     * The process's cached state, re-read when it is old or when the sample's start time says the pid now
     * belongs to another process. Returns null rather than another process's mappings.
     */
    private ProcessState process(int pid, long startTicks) {
        long now = nowNanos();
        ProcessState p = processes.getIfPresent(pid);
        boolean reused = p != null && startTicks >= 0 && p.startTime != startTicks;
        if (p != null && now - p.readAtNanos < REFRESH_NANOS && !reused) {
            return p;
        }
        if (reused && p.mismatchAtNanos != 0 && now - p.mismatchAtNanos < MISS_REREAD_NANOS) {
            return null; // re-read lately and still another process: the sample's process is gone
        }
        ProcessState fresh = readProcess(pid, now);
        if (fresh != null) {
            if (p != null && fresh.startTime != p.startTime) {
                LOG.log(System.Logger.Level.DEBUG, "pid " + pid + " now belongs to a new process");
            }
            processes.put(pid, fresh);
            p = fresh;
        } else if (p != null) {
            p.lastMissReadNanos = now; // gone: keep what we knew so late samples still resolve
        }
        if (p != null && startTicks >= 0 && p.startTime != startTicks) {
            p.mismatchAtNanos = now;
            return null;
        }
        return p;
    }

    /** An address outside every known mapping: dlopen, exec, or a new process with a reused pid. */
    private ProcessState rereadOnMiss(int pid, ProcessState p) {
        long now = nowNanos();
        if (now - p.lastMissReadNanos < MISS_REREAD_NANOS) {
            return p;
        }
        p.lastMissReadNanos = now;
        ProcessState fresh = readProcess(pid, now);
        if (fresh == null) {
            return p;
        }
        if (fresh.startTime != p.startTime) {
            LOG.log(System.Logger.Level.DEBUG, "pid " + pid + " was reused by a new process");
        }
        processes.put(pid, fresh);
        return fresh;
    }

    private ProcessState readProcess(int pid, long now) {
        mapsReads.incrementAndGet();
        try {
            long start = startTime(pid);
            List<MapEntry> exec = new ArrayList<>();
            for (MapEntry e : ProcMaps.read(procRoot, pid)) {
                if (e.executable()) {
                    exec.add(e);
                }
            }
            return new ProcessState(start, exec, now);
        } catch (IOException | RuntimeException e) {
            mapsReadFailures.incrementAndGet();
            LOG.log(System.Logger.Level.DEBUG, "cannot read /proc/" + pid + ": " + e);
            return null;
        }
    }

    /** Field 22 of /proc/PID/stat; parsed after the last ')' because comm may hold spaces and parens. */
    private long startTime(int pid) throws IOException {
        String stat = Files.readString(procRoot.resolve(Integer.toString(pid)).resolve("stat"));
        int close = stat.lastIndexOf(')');
        if (close < 0) {
            throw new IOException("malformed /proc/" + pid + "/stat");
        }
        String[] f = stat.substring(close + 2).trim().split(" ");
        if (f.length < 20) {
            throw new IOException("malformed /proc/" + pid + "/stat");
        }
        return Long.parseLong(f[19]); // fields start at 3 (state): 22 - 3 = 19
    }

    private Binary binary(int pid, MapEntry m) {
        if (m.path().equals("[vdso]")) {
            return vdso();
        }
        if (!m.fileBacked()) {
            return ANONYMOUS;
        }
        FileKey key = new FileKey(m.devMajor(), m.devMinor(), m.inode(), m.path());
        Binary b = binaries.getIfPresent(key);
        if (b == null) {
            b = load(pid, m);
            if (b != null) {
                binaries.put(key, b);
            } else {
                b = UNREADABLE;
            }
        }
        return b;
    }

    private static final Binary ANONYMOUS = new Binary(null, null, null, "anonymous");
    private static final Binary UNREADABLE = new Binary(null, null, null, "unreadable");

    /**
     * Parses the mapped file. A defective file gives a failure entry (cached: it is read once and logged
     * once); a file we could not open (the process exited mid-read, permissions) gives null, not cached,
     * so other processes mapping the same file still resolve.
     */
    private Binary load(int pid, MapEntry m) {
        Path pidDir = procRoot.resolve(Integer.toString(pid));
        List<Path> candidates = List.of(pidDir.resolve("map_files").resolve(m.mapFilesName()),
                pidDir.resolve("root").resolve(m.path().substring(1)));
        String lastError = null;
        for (Path p : candidates) {
            try {
                ElfFile elf = ElfFile.open(p);
                return new Binary(elf.symbols(), elf, elf.buildId().orElse(null), null);
            } catch (ElfException e) {
                String error = e.getMessage().replace(p.toString(), m.path());
                binaryFailures.incrementAndGet();
                LOG.log(System.Logger.Level.WARNING, "cannot symbolize " + m.path() + " (pid " + pid + "): " + error
                        + "; its frames stay addresses");
                return new Binary(null, null, null, error);
            } catch (NoSuchFileException e) {
                lastError = "not found";
            } catch (IOException | RuntimeException e) {
                lastError = e.toString();
            }
        }
        unreadable.incrementAndGet();
        LOG.log(System.Logger.Level.DEBUG, "cannot open " + m.path() + " of pid " + pid + ": " + lastError);
        return null;
    }

    /** The vdso is the same image in every process: read it once from our own memory. */
    private Binary vdso() {
        if (!vdsoTried) {
            vdsoTried = true;
            try {
                MapEntry self = null;
                for (MapEntry e : ProcMaps.read(procRoot, (int) ProcessHandle.current().pid())) {
                    if (e.path().equals("[vdso]")) {
                        self = e;
                    }
                }
                if (self == null) {
                    throw new IOException("no [vdso] mapping in our own maps");
                }
                byte[] image = new byte[(int) (self.end() - self.start())];
                try (RandomAccessFile mem = new RandomAccessFile(procRoot.resolve("self/mem").toFile(), "r")) {
                    mem.seek(self.start());
                    mem.readFully(image);
                }
                ElfFile elf = ElfFile.parse("[vdso]", ByteBuffer.wrap(image));
                vdso = new Binary(elf.symbols(), elf, elf.buildId().orElse(null), null);
            } catch (IOException | ElfException | RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "cannot read the vdso: " + e.getMessage() + "; vdso frames stay addresses");
                vdso = new Binary(null, null, null, String.valueOf(e.getMessage()));
            }
        }
        return vdso;
    }

    // ---------------- kernel ----------------

    @Override
    public void symbolizeKernel(long[] addrs, int count, List<Frame> out) {
        KernelSymbols k = kernel(false);
        for (int i = 0; i < count; i++) {
            long addr = i == 0 ? addrs[i] : addrs[i] - 1;
            if (k != null && !k.covers(addr)) {
                k = kernel(true); // a module loaded since we read kallsyms?
            }
            String fn = k != null && k.covers(addr) ? k.table.lookup(addr) : null;
            if (fn == null) {
                unresolved.incrementAndGet();
            }
            out.add(new Frame(addr, k == null ? null : k.ref, fn, true));
        }
    }

    private KernelSymbols kernel(boolean missed) {
        long now = nowNanos();
        boolean due = kernel == null ? kernelLoadedAt == Long.MIN_VALUE || now - kernelLoadedAt > KALLSYMS_RELOAD_NANOS
                : missed && now - kernelLoadedAt > KALLSYMS_RELOAD_NANOS;
        if (due) {
            kernelLoadedAt = now;
            try {
                KernelSymbols k = KernelSymbols.load(kallsymsPath);
                if (k.restricted && !kernelWarned) {
                    kernelWarned = true;
                    LOG.log(System.Logger.Level.WARNING, kallsymsPath + " shows only zero addresses (kptr_restrict;"
                            + " needs CAP_SYSLOG): kernel frames stay addresses");
                }
                kernel = k;
            } catch (IOException e) {
                if (!kernelWarned) {
                    kernelWarned = true;
                    LOG.log(System.Logger.Level.WARNING, "cannot read " + kallsymsPath + ": " + e + "; kernel frames stay addresses");
                }
            }
        }
        return kernel;
    }

    @Override
    public Stats stats() {
        KernelSymbols k = kernel;
        return new Stats(processes.estimatedSize(), binaries.estimatedSize(), binaryFailures.get(), unresolved.get(),
                mapsReads.get(), mapsReadFailures.get(), k == null ? 0 : k.table.size());
    }

    @Override
    public void close() {
        processes.invalidateAll();
        binaries.invalidateAll();
    }
}
