package dev.loupe.bpf;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Test-only: BPF objects compiled as the build compiles them, through the one command line, {@code src/main/c/bpf-clang.sh}. */
final class BpfClang {
    static final Path C_SOURCES = Path.of("src/main/c");
    private static final Path SCRIPT = C_SOURCES.resolve("bpf-clang.sh");

    private BpfClang() {}

    /** Compiles {@code source} to {@code object}; {@code includes} are searched after the source's own directory. */
    static Path compile(Path source, Path object, Path... includes) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of(SCRIPT.toAbsolutePath().toString()));
        for (Path i : includes) {
            cmd.add("-I" + i);
        }
        cmd.addAll(List.of("-c", source.toString(), "-o", object.toString()));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        assertEquals(0, p.waitFor(), cmd + "\n" + out);
        return object;
    }

    /**
     * {@code program} (a .bpf.c of src/main/c) compiled in {@code dir} with its header {@code header} drifted: {@code from}
     * replaced by {@code to}. The copies come first; src/main/c serves the headers not copied.
     */
    static Path drifted(String program, String header, String from, String to, Path dir) throws IOException, InterruptedException {
        String text = Files.readString(C_SOURCES.resolve(header));
        assertTrue(text.contains(from), "test premise: " + header + " has " + from);
        Files.writeString(dir.resolve(header), text.replace(from, to));
        Path source = Files.copy(C_SOURCES.resolve(program), dir.resolve(program), StandardCopyOption.REPLACE_EXISTING);
        return compile(source, dir.resolve("drifted.bpf.o"), C_SOURCES);
    }
}
