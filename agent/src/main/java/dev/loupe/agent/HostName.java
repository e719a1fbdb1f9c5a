package dev.loupe.agent;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** This host's name for the {@code node} series label: the kernel's, as Parca's agents use it. */
final class HostName {
    private HostName() {}

    static String get() {
        try {
            String h = Files.readString(Path.of("/proc/sys/kernel/hostname")).trim();
            if (!h.isEmpty()) {
                return h;
            }
        } catch (IOException e) {
            // fall through
        }
        String env = System.getenv("HOSTNAME");
        return env == null || env.isBlank() ? "unknown" : env;
    }
}
