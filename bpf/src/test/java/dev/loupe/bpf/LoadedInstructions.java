package dev.loupe.bpf;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Test-only: a loaded program's instructions as the verifier left them ({@code bpftool prog dump xlated}). */
final class LoadedInstructions {
    private LoadedInstructions() {}

    /** The kernel's id of a program loaded by this process, from its fd's fdinfo. */
    static int id(BpfProgram p) throws IOException {
        Matcher m = Pattern.compile("(?m)^prog_id:\\s+(\\d+)$").matcher(Files.readString(Path.of("/proc/self/fdinfo/" + p.fd())));
        if (!m.find()) {
            throw new IllegalStateException("no prog_id in the fdinfo of fd " + p.fd());
        }
        return Integer.parseInt(m.group(1));
    }

    /** The xlated dump, helper calls named ({@code call bpf_get_current_pid_tgid#...}). */
    static String dump(BpfProgram p) throws IOException, InterruptedException {
        String bpftool = Files.isExecutable(Path.of("/usr/sbin/bpftool")) ? "/usr/sbin/bpftool" : "bpftool";
        Process proc = new ProcessBuilder(bpftool, "prog", "dump", "xlated", "id", Integer.toString(id(p)))
                .redirectErrorStream(true).start();
        String out = new String(proc.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (proc.waitFor() != 0) {
            throw new IllegalStateException("bpftool failed: " + out);
        }
        return out;
    }

    /** How many calls of helper {@code name} the loaded program makes (in its text, not per run). */
    static int calls(String dump, String name) {
        Matcher m = Pattern.compile("call " + Pattern.quote(name) + "#").matcher(dump);
        int n = 0;
        while (m.find()) {
            n++;
        }
        return n;
    }
}
