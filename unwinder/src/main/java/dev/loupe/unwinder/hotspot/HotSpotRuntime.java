package dev.loupe.unwinder.hotspot;

import dev.loupe.unwinder.proc.MapEntry;
import dev.loupe.unwinder.runtime.FrameType;
import dev.loupe.unwinder.runtime.ManagedRuntime;
import dev.loupe.unwinder.runtime.RuntimeProcess;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * HotSpot JVMs (JDK 8 to 25), read from outside with no flag and no attach: a process is one when it maps
 * {@code libjvm.so}; its {@link HotSpotProcess} names compiled and interpreted Java frames and gives the walker a
 * table for the code cache. Its BPF step is {@code hotspot.bpf.h} (rule kind {@code RULE_JAVA_INTERP}), which reports
 * an interpreter frame as its {@code Method*} and bci ({@link FrameType#HOTSPOT_METHOD}, {@link InterpreterFrameStep#value}).
 */
public final class HotSpotRuntime implements ManagedRuntime {
    private static final System.Logger LOG = System.getLogger(HotSpotRuntime.class.getName());

    /** Opens a process's JVM; production reads it through /proc with {@link HotSpotJvm#open}. */
    public interface Opener {
        Optional<HotSpotJvm> open(int pid) throws IOException, HotSpotException;
    }

    private final Opener opener;
    private final LongSupplier nanoTime;
    final AtomicLong scans = new AtomicLong();
    final AtomicLong tablesBuilt = new AtomicLong();
    final AtomicLong scanFailures = new AtomicLong();
    final AtomicLong freshBlobs = new AtomicLong();

    public HotSpotRuntime(Opener opener, LongSupplier nanoTime) {
        this.opener = opener;
        this.nanoTime = nanoTime;
    }

    /** JVMs read through {@code procRoot} (normally /proc). */
    public static HotSpotRuntime reading(Path procRoot, LongSupplier nanoTime) {
        return new HotSpotRuntime(pid -> HotSpotJvm.open(procRoot, pid), nanoTime);
    }

    @Override
    public String name() {
        return "hotspot";
    }

    @Override
    public boolean detect(List<MapEntry> executable) {
        return ManagedRuntime.anyMapping(executable, m -> HotSpotJvm.isLibjvm(m.path()));
    }

    @Override
    public Optional<RuntimeProcess> open(int pid, String exe) throws IOException {
        try {
            return opener.open(pid).map(jvm -> new HotSpotProcess(this, pid, jvm, exe, nanoTime));
        } catch (HotSpotException | RuntimeException e) {
            LOG.log(System.Logger.Level.INFO, "jit tables: pid " + pid + " maps libjvm.so but its layout cannot be read ("
                    + e.getMessage() + "); its Java frames keep frame pointers");
            return Optional.empty();
        }
    }

    @Override
    public Set<FrameType> frameTypes() {
        return Set.of(FrameType.HOTSPOT_METHOD);
    }

    @Override
    public Map<String, Long> counters() {
        return Map.of("scans", scans.get(), "tables_built", tablesBuilt.get(), "scan_failures", scanFailures.get(),
                "fresh_blobs", freshBlobs.get());
    }
}
