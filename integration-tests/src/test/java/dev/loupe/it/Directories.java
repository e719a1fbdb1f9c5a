package dev.loupe.it;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

/** What tests and benchmarks leave behind in their own directories. */
public final class Directories {
    private Directories() {}

    /** Deletes {@code dir} and everything under it. */
    public static void delete(Path dir) throws IOException {
        try (Stream<Path> files = Files.walk(dir)) {
            for (Path f : files.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(f);
            }
        }
    }
}
