package dev.loupe.unwinder.fuzz;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Scratch files for targets whose reader takes a path (ELF files, perf maps): in a directory of this JVM under
 * {@code /dev/shm} (memory: a write per execution costs microseconds), else the temporary directory; removed when
 * the JVM exits.
 */
public final class FuzzFiles {
    private static Path dir;

    private FuzzFiles() {}

    /** A path named {@code name} in this JVM's scratch directory (the file itself is not created). */
    public static synchronized Path scratch(String name) {
        if (dir == null) {
            try {
                Path shm = Path.of("/dev/shm");
                Path parent = Files.isDirectory(shm) && Files.isWritable(shm) ? shm : Path.of(System.getProperty("java.io.tmpdir"));
                dir = Files.createTempDirectory(parent, "loupe-fuzz-");
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            Path d = dir;
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                try (var files = Files.walk(d)) {
                    files.sorted(java.util.Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
                } catch (IOException ignored) {
                    // best effort
                }
            }));
        }
        return dir.resolve(name);
    }

    /** Writes {@code data} to the scratch file {@code name} (replacing its contents, same inode) and returns its path. */
    public static Path write(String name, byte[] data) {
        Path p = scratch(name);
        try {
            Files.write(p, data);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return p;
    }
}
