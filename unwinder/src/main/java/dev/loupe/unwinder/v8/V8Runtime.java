package dev.loupe.unwinder.v8;

import dev.loupe.unwinder.ehframe.UnwindTable;
import dev.loupe.unwinder.proc.FileKey;
import dev.loupe.unwinder.proc.MapEntry;
import dev.loupe.unwinder.proc.ProcMaps;
import dev.loupe.unwinder.proc.ProcessMemory;
import dev.loupe.unwinder.runtime.FrameType;
import dev.loupe.unwinder.runtime.ManagedRuntime;
import dev.loupe.unwinder.runtime.RuntimeProcess;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * Node processes, read from outside with no flag in the target: a process is one when it maps {@code node} (or
 * {@code libnode.so}) executable. Its binary exports V8's postmortem metadata ({@link V8Metadata}), read once per file:
 * the walker walks the binary with its {@link #fileTable} (the embedded builtins as V8 frames) and the process's JIT
 * code with its {@link V8Process#codeTable}, and reports each JavaScript frame as its SharedFunctionInfo
 * ({@code v8.bpf.h}); the process names them. A binary without a usable layout keeps native frames (and perf maps),
 * said in one log line per binary.
 */
public final class V8Runtime implements ManagedRuntime {
    private static final System.Logger LOG = System.getLogger(V8Runtime.class.getName());
    static final int BINARIES = 16;

    private final Path procRoot;
    private final LongSupplier nanoTime;
    private final Map<FileKey, Object> binaries = new LinkedHashMap<>(BINARIES, 0.75f, true); // Binary or Unsupported
    final AtomicLong binariesRead = new AtomicLong();
    final AtomicLong unknownLayouts = new AtomicLong();
    final AtomicLong opened = new AtomicLong();
    final AtomicLong objectReads = new AtomicLong();
    final AtomicLong badObjects = new AtomicLong();
    final AtomicLong tablesBuilt = new AtomicLong();
    final AtomicLong scanFailures = new AtomicLong();
    final AtomicLong lines = new AtomicLong();

    /** One binary's metadata and layout. */
    record Binary(V8Metadata metadata, V8Layout layout) {}

    private V8Runtime(Path procRoot, LongSupplier nanoTime) {
        this.procRoot = procRoot;
        this.nanoTime = nanoTime;
    }

    /** Node processes read through {@code procRoot} (normally /proc). */
    public static V8Runtime reading(Path procRoot, LongSupplier nanoTime) {
        return new V8Runtime(procRoot, nanoTime);
    }

    @Override
    public String name() {
        return "v8";
    }

    @Override
    public boolean detect(List<MapEntry> executable) {
        return ManagedRuntime.anyMapping(executable, m -> m.executable() && isNode(m.path()));
    }

    /** Whether a path names node's binary or its shared library. */
    static boolean isNode(String path) {
        String base = path.substring(path.lastIndexOf('/') + 1);
        if (base.startsWith("libnode.so")) {
            return true;
        }
        // node or nodeNN, without a regex: every process's every executable mapping is asked (String.matches compiled
        // a pattern each time)
        if (!base.startsWith("node")) {
            return false;
        }
        for (int i = 4; i < base.length(); i++) {
            if (base.charAt(i) < '0' || base.charAt(i) > '9') {
                return false;
            }
        }
        return true;
    }

    @Override
    public Optional<RuntimeProcess> open(int pid, String exe) throws IOException {
        return open(pid, exe, ProcMaps.read(procRoot, pid).stream().filter(MapEntry::executable).toList());
    }

    @Override
    public Optional<RuntimeProcess> open(int pid, String exe, List<MapEntry> executable) throws IOException {
        MapEntry found = null;
        for (MapEntry m : executable) {
            if (m.executable() && m.fileBacked() && isNode(m.path())) {
                found = m;
            }
        }
        if (found == null) {
            return Optional.empty();
        }
        Binary bin;
        try {
            bin = binary(found, found.readableFile(procRoot, pid));
        } catch (V8Layout.Unsupported e) {
            return Optional.empty(); // said once for its binary
        }
        ProcessMemory mem = ProcessMemory.open(procRoot, pid);
        opened.incrementAndGet();
        return Optional.of(new V8Process(this, procRoot, pid, mem, bin.layout(), exe, nanoTime));
    }

    /** node's binary as the walker walks it: its own rows, the embedded builtins as V8 frames; empty if unreadable. */
    @Override
    public Optional<UnwindTable> fileTable(MapEntry m, Path file, UnwindTable own) throws IOException {
        if (!isNode(m.path())) {
            return Optional.empty();
        }
        Binary bin;
        try {
            bin = binary(m, file);
        } catch (V8Layout.Unsupported e) {
            return Optional.empty();
        }
        try {
            UnwindTable t = V8Tables.binary("[js] " + m.path(), own, bin.metadata().builtinsLow(),
                    bin.metadata().builtinsHigh(), V8FrameStep.dataWord(bin.layout()));
            LOG.log(System.Logger.Level.INFO, "v8: " + m.path() + ": builtins 0x" + Long.toHexString(bin.metadata().builtinsLow())
                    + "-0x" + Long.toHexString(bin.metadata().builtinsHigh()) + " walked as V8 frames (" + bin.layout() + ")");
            return Optional.of(t);
        } catch (Exception e) {
            LOG.log(System.Logger.Level.WARNING, "v8: " + m.path() + ": no table (" + e.getMessage()
                    + "); its JavaScript frames stay native");
            return Optional.empty();
        }
    }

    /** The binary {@code m} maps, read on first use and kept with a few others, as is a failure (logged once). */
    Binary binary(MapEntry m, Path file) throws IOException, V8Layout.Unsupported {
        FileKey key = FileKey.of(m, Files.readAttributes(file, BasicFileAttributes.class));
        synchronized (binaries) {
            Object known = binaries.get(key);
            if (known instanceof Binary b) {
                return b;
            }
            if (known instanceof V8Layout.Unsupported u) {
                throw u;
            }
        }
        Object read;
        try {
            V8Metadata md = V8Metadata.read(file);
            if (md.builtinsLow() == 0) {
                throw new V8Layout.Unsupported("no Builtins_ symbols (embedded builtins)");
            }
            read = new Binary(md, V8Layout.of(md));
            binariesRead.incrementAndGet();
        } catch (V8Layout.Unsupported e) {
            unknownLayouts.incrementAndGet();
            LOG.log(System.Logger.Level.INFO, "v8: " + m.path() + ": " + e.getMessage()
                    + "; its JavaScript frames stay native (perf maps still name them)");
            read = e;
        }
        synchronized (binaries) {
            binaries.put(key, read);
            if (binaries.size() > BINARIES) {
                binaries.remove(binaries.keySet().iterator().next());
            }
        }
        if (read instanceof V8Layout.Unsupported u) {
            throw u;
        }
        return (Binary) read;
    }


    @Override
    public Set<FrameType> frameTypes() {
        return Set.of(FrameType.V8);
    }

    @Override
    public Map<String, Long> counters() {
        return Map.of("opened", opened.get(), "unknown_layouts", unknownLayouts.get(), "binaries_read", binariesRead.get(),
                "object_reads", objectReads.get(), "bad_objects", badObjects.get(), "tables_built", tablesBuilt.get(),
                "scan_failures", scanFailures.get(), "lines", lines.get());
    }
}
