package dev.loupe.config;

import java.util.List;

/** The subcommands that take options: each {@link Option} names the ones it belongs to. */
public enum Command {
    RUN("run", "loupe run [options]",
            "Profiles every CPU with eBPF and writes gzipped pprof files; serves /debug/pprof/profile and /metrics."),
    RELAY("relay", "loupe relay --kafka-bootstrap-servers HOST:PORT[,...] --remote-store-address HOST:PORT [options]",
            "Forwards the profiles Loupe agents write to Kafka to Parca, as a member of a consumer group: run more "
                    + "instances with the same group id to share the partitions. Offsets are committed only after Parca "
                    + "accepted the records."),
    LATENCY_DIFF("latency-diff", "loupe latency-diff [options] BASE.pb.gz CURRENT.pb.gz",
            "Compares two latency profiles as Loupe writes them, per function, with the agent's regression method; "
                    + "exits 1 when a function got slower (for gating a canary or CI stage), 2 on bad input.",
            new Operand("BASE.pb.gz", "the baseline's latency profile (gzipped pprof, as Loupe writes it)"),
            new Operand("CURRENT.pb.gz", "the latency profile to judge against it"));

    /** A positional argument the command requires, in order. */
    record Operand(String label, String description) {}

    private final String word;
    private final String synopsis;
    private final String description;
    private final List<Operand> operands;

    Command(String word, String synopsis, String description, Operand... operands) {
        this.word = word;
        this.synopsis = synopsis;
        this.description = description;
        this.operands = List.of(operands);
    }

    /** The word after {@code loupe}. */
    public String word() {
        return word;
    }

    String synopsis() {
        return synopsis;
    }

    String description() {
        return description;
    }

    List<Operand> operands() {
        return operands;
    }
}
