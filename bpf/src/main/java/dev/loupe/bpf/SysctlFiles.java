package dev.loupe.bpf;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Reads small /proc and /sys files in one read(2). Sysctl files answer EOF to any read at a non-zero
 * offset, and {@code Files.readString} first reads one byte (their stat size is 0), so it would see "1"
 * for "100000".
 */
final class SysctlFiles {
    private SysctlFiles() {}

    static String read(Path p) throws IOException {
        try (InputStream in = Files.newInputStream(p)) {
            byte[] buf = new byte[16384];
            int n = in.read(buf);
            return n <= 0 ? "" : new String(buf, 0, n, StandardCharsets.UTF_8).trim();
        }
    }
}
