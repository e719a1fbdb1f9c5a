package dev.loupe.config;

import java.nio.file.Path;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * Functions to measure with latency probes (issue 7): in every process running {@code binary} (including
 * processes that start later), or in the one process {@code pid}.
 *
 * @param binary    the executable or library, for every process that maps it; empty when {@code pid} is set
 * @param pid       one process (its /proc/PID/exe); empty when {@code binary} is set
 * @param functions names or globs ({@code main.*}); a name that exists exactly is taken literally
 * @param stacks    caller stacks at entry in the latency profile (YAML {@code stacks: true}, flag {@code --probe-stacks true})
 */
public record ProbeConfig(Optional<Path> binary, OptionalInt pid, List<String> functions, boolean stacks) {
    public ProbeConfig {
        Objects.requireNonNull(binary, "binary");
        Objects.requireNonNull(pid, "pid");
        functions = List.copyOf(functions);
        if (binary.isPresent() == pid.isPresent()) {
            throw new IllegalArgumentException("give exactly one of binary and pid");
        }
        if (functions.isEmpty()) {
            throw new IllegalArgumentException("functions: at least one function name or glob");
        }
        for (String f : functions) {
            if (f.isBlank()) {
                throw new IllegalArgumentException("functions: an empty function name");
            }
        }
    }

    public static ProbeConfig ofBinary(Path binary, List<String> functions, boolean stacks) {
        return new ProbeConfig(Optional.of(binary), OptionalInt.empty(), functions, stacks);
    }

    public static ProbeConfig ofPid(int pid, List<String> functions, boolean stacks) {
        return new ProbeConfig(Optional.empty(), OptionalInt.of(pid), functions, stacks);
    }

    /** How the user wrote the target: {@code /usr/bin/app} or {@code pid=123}. */
    public String target() {
        return binary.map(Path::toString).orElseGet(() -> "pid=" + pid.getAsInt());
    }
}
