package dev.loupe.unwinder.symbolize;

import dev.loupe.unwinder.elf.ElfException;
import dev.loupe.unwinder.elf.ElfFile;
import dev.loupe.unwinder.proc.MapEntry;
import dev.loupe.unwinder.proc.Vdso;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The vdso's symbols. It is the same image in every process of a kernel (per ABI): read it from our own
 * memory once, or from the target's memory when its [vdso] has another size (a 32-bit process); one
 * parse per size, a failure included (logged once).
 *
 * <p>Threading: {@link #binary} runs on one thread; {@link #failures} may be read from any.
 */
final class VdsoSymbols {
    /** The symbolizer's logger: one logger name for all its messages. */
    private static final System.Logger LOG = System.getLogger(ProcSymbolizer.class.getName());

    private final Path procRoot;
    private final Map<Long, Binary> bySize = new HashMap<>(); // 64-bit and 32-bit vdso differ
    private final AtomicLong failures = new AtomicLong();

    VdsoSymbols(Path procRoot) {
        this.procRoot = procRoot;
    }

    /** The binary of {@code pid}'s [vdso] mapping {@code m}. */
    Binary binary(int pid, MapEntry m) {
        long size = m.end() - m.start();
        Binary b = bySize.get(size);
        if (b == null) {
            b = read(pid, m);
            bySize.put(size, b);
        }
        return b;
    }

    private Binary read(int pid, MapEntry target) {
        long size = target.end() - target.start();
        String lastError = "no readable " + Vdso.MAPPING_NAME;
        // Our own /proc/self, and the one under procRoot (a host /proc mounted elsewhere still has it).
        for (Path self : List.of(Path.of("/proc/self"), procRoot.resolve("self"))) {
            try {
                MapEntry own = Vdso.mapping(self).orElse(null);
                if (own != null && own.end() - own.start() == size) {
                    return parse(Vdso.read(self, own));
                }
            } catch (IOException | ElfException | RuntimeException e) {
                lastError = String.valueOf(e.getMessage());
            }
        }
        try {
            return parse(Vdso.read(procRoot.resolve(Integer.toString(pid)), target));
        } catch (IOException | ElfException | RuntimeException e) {
            lastError = String.valueOf(e.getMessage());
        }
        LOG.log(System.Logger.Level.WARNING, "cannot read the vdso (" + size + " bytes): " + lastError
                + "; vdso frames stay addresses");
        failures.incrementAndGet();
        return new Binary.Failed(lastError);
    }

    private static Binary parse(byte[] image) throws ElfException {
        ElfFile elf = ElfFile.parse(Vdso.MAPPING_NAME, ByteBuffer.wrap(image));
        return new Binary.Loaded(elf.symbols(), elf, elf.buildId().orElse(null));
    }

    /** Vdso images that could not be read or parsed. */
    long failures() {
        return failures.get();
    }
}
