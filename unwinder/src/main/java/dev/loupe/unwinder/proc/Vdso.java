package dev.loupe.unwinder.proc;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Reads the kernel's vdso image, which no file holds: from a process's memory ({@link ProcessMemory} at
 * its {@code [vdso]} mapping). It is the same image in every process of one ABI, so our own serves every
 * 64-bit process; a target's own memory serves one whose [vdso] has another size (32-bit).
 */
public final class Vdso {
    /** The mapping's name in /proc/PID/maps. */
    public static final String MAPPING_NAME = "[vdso]";
    /** A vdso is a few pages; anything larger is not one. */
    private static final long MAX_SIZE = 1 << 20;
    private static final Path SELF = Path.of("/proc/self");

    private Vdso() {}

    /**
     * This process's vdso image. IOException with the reason: no [vdso] in /proc/self/maps, an implausible
     * size, or unreadable memory.
     */
    public static byte[] ownImage() throws IOException {
        MapEntry m = mapping(SELF).orElseThrow(() -> new IOException("no " + MAPPING_NAME + " in " + SELF.resolve("maps")));
        return read(SELF, m);
    }

    /** The [vdso] mapping in {@code procDir/maps} ({@code procDir}: /proc/self, /proc/PID), if it has one. */
    public static Optional<MapEntry> mapping(Path procDir) throws IOException {
        for (MapEntry e : ProcMaps.parse(ProcMaps.readText(procDir.resolve("maps")))) {
            if (e.path().equals(MAPPING_NAME)) {
                return Optional.of(e);
            }
        }
        return Optional.empty();
    }

    /** The bytes of {@code mapping} (a [vdso] mapping of that process) from {@code procDir/mem}. */
    public static byte[] read(Path procDir, MapEntry mapping) throws IOException {
        long size = mapping.end() - mapping.start();
        if (size <= 0 || size > MAX_SIZE) {
            throw new IOException("implausible " + MAPPING_NAME + " size " + size);
        }
        byte[] image = new byte[(int) size];
        try (ProcessMemory mem = ProcessMemory.open(procDir)) {
            mem.read(mapping.start(), ByteBuffer.wrap(image));
        }
        return image;
    }
}
