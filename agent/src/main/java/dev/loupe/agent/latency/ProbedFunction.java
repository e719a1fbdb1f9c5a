package dev.loupe.agent.latency;

import dev.loupe.agent.regression.FunctionKey;
import dev.loupe.bpf.ProbeSpec;
import dev.loupe.unwinder.proc.FileKey;

/**
 * One function being measured: its kernel probe and the names it is reported under.
 *
 * @param binary       the {@code binary} label: the configured path, or the executable of a {@code pid=} probe
 * @param function     the symbol name (the {@code function} label)
 * @param entryAddress link-time address of the entry (the pprof location's address)
 * @param spec         what is attached; {@code spec.id()} keys its histogram
 * @param buildId      the binary's GNU build id, else its Go build id, else "" (the {@code build_id} label)
 * @param file         the file the probe is on, as it was when resolved (a new file at the path is a new build)
 */
record ProbedFunction(String binary, String function, long entryAddress, ProbeSpec spec, String buildId, FileKey file) {
    ProbedFunction(String binary, String function, long entryAddress, ProbeSpec spec) {
        this(binary, function, entryAddress, spec, "", FileKey.NONE);
    }

    int id() {
        return spec.id();
    }

    FunctionKey key() {
        return new FunctionKey(binary, function);
    }

    /** What makes two plans' functions the same probe: everything but the id. */
    Identity identity() {
        return new Identity(binary, function, spec.pid(), spec.stacks(), file);
    }

    ProbedFunction withId(int id) {
        return new ProbedFunction(binary, function, entryAddress, spec.withId(id), buildId, file);
    }

    record Identity(String binary, String function, int pid, boolean stacks, FileKey file) {}
}
