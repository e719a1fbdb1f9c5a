package dev.loupe.it;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** The real {@code go tool pprof} from Debian's golang-1.19. */
final class PprofTool {
    static final Path GO = Path.of("/usr/lib/go-1.19/bin/go");

    private PprofTool() {}

    /** Runs {@code go tool pprof ARGS}; fails the test if pprof exits non-zero. */
    static String run(String... args) throws Exception {
        if (!Files.isExecutable(GO)) {
            throw new IllegalStateException(GO + " missing: install golang-1.19 (./loupe test does)");
        }
        List<String> cmd = new ArrayList<>(List.of(GO.toString(), "tool", "pprof"));
        cmd.addAll(List.of(args));
        Commands.Result r = Commands.run(cmd, 120);
        if (r.exit() != 0) {
            throw new AssertionError("go tool pprof " + String.join(" ", args) + " exited " + r.exit() + ":\n" + r.output());
        }
        return r.output();
    }
}
