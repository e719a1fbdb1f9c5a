package dev.loupe.unwinder.symbolize;

import dev.loupe.unwinder.elf.ElfException;
import dev.loupe.unwinder.elf.ElfFile;
import dev.loupe.unwinder.elf.SymbolTable;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A stripped binary's full symbol table from its separate debug file ({@code /usr/lib/debug/.build-id/xx/
 * rest.debug}, in the process's root first, then ours), which names the static functions that .dynsym lacks.
 */
final class DebugSymbolFiles {
    /** The symbolizer's logger: one logger name for all its messages. */
    private static final System.Logger LOG = System.getLogger(ProcSymbolizer.class.getName());
    private static final String BUILD_ID_DIR = "usr/lib/debug/.build-id";
    private static final Path HOST_DEBUG_DIR = Path.of("/").resolve(BUILD_ID_DIR);

    private final Path procRoot;
    private final long maxSymbolBytes;
    private final AtomicLong used = new AtomicLong();

    DebugSymbolFiles(Path procRoot, long maxSymbolBytes) {
        this.procRoot = procRoot;
        this.maxSymbolBytes = maxSymbolBytes;
    }

    /** The debug file's symbols for the binary with {@code buildId} mapped by {@code pid}; its build id must match. Null if none. */
    SymbolTable symbols(int pid, String buildId) {
        if (buildId.length() < 3) {
            return null;
        }
        String rel = buildId.substring(0, 2) + "/" + buildId.substring(2) + ".debug";
        Path inRoot = procRoot.resolve(Integer.toString(pid)).resolve("root").resolve(BUILD_ID_DIR).resolve(rel);
        for (Path p : List.of(inRoot, HOST_DEBUG_DIR.resolve(rel))) {
            if (!Files.isRegularFile(p)) {
                continue;
            }
            try {
                ElfFile d = ElfFile.open(p, maxSymbolBytes);
                if (d.buildId().filter(buildId::equals).isPresent()) {
                    used.incrementAndGet();
                    return d.symbols();
                }
            } catch (ElfException | IOException | RuntimeException e) {
                LOG.log(System.Logger.Level.DEBUG, () -> "ignoring debug file " + p + ": " + e.getMessage());
            }
        }
        return null;
    }

    /** Debug files whose symbols were used. */
    long used() {
        return used.get();
    }
}
