package dev.loupe.agent.latency;

import dev.loupe.bpf.ProbeSpec;

/**
 * One function being measured: its kernel probe and the names it is reported under.
 *
 * @param binary       the {@code binary} label: the configured path, or the executable of a {@code pid=} probe
 * @param function     the symbol name (the {@code function} label)
 * @param entryAddress link-time address of the entry (the pprof location's address)
 * @param spec         what is attached; {@code spec.id()} keys its histogram
 */
record ProbedFunction(String binary, String function, long entryAddress, ProbeSpec spec) {
    int id() {
        return spec.id();
    }
}
