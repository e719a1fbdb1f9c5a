package dev.loupe.agent.latencydiff;

import dev.loupe.agent.regression.FineHistogram;
import dev.loupe.agent.regression.FunctionKey;
import dev.loupe.agent.regression.LatencyComparison;
import dev.loupe.config.Command;
import dev.loupe.config.CommandLine;
import dev.loupe.config.ConfigException;
import dev.loupe.config.LatencyDiffConfig;

import java.io.PrintStream;
import java.util.List;
import java.util.Map;

/**
 * {@code loupe latency-diff [options] BASE.pb.gz CURRENT.pb.gz}: compares two latency profiles per (binary,
 * function) with {@link LatencyComparison} and prints the result. Exit codes: 0 nothing regressed, 1 some
 * function regressed, 2 bad arguments or a file that is not a latency profile it can compare (one line on
 * stderr naming the file and what is wrong).
 */
public final class LatencyDiffCommand {
    static final int NOT_REGRESSED = 0;
    static final int REGRESSED = 1;
    static final int BAD_INPUT = 2;
    private static final String NAME = "loupe " + Command.LATENCY_DIFF.word();

    private LatencyDiffCommand() {}

    public static int run(String[] args) {
        return run(args, System.out, System.err);
    }

    static int run(String[] args, PrintStream out, PrintStream err) {
        LatencyDiffConfig config;
        try {
            CommandLine.ParsedLatencyDiff parsed = CommandLine.parseLatencyDiff(args);
            if (parsed.help()) {
                out.println(CommandLine.usage(Command.LATENCY_DIFF));
                return NOT_REGRESSED;
            }
            config = parsed.config();
        } catch (ConfigException e) {
            err.println(NAME + ": " + e.getMessage());
            err.println("Try '" + NAME + " --help'.");
            return BAD_INPUT;
        }
        Map<FunctionKey, FineHistogram> base;
        Map<FunctionKey, FineHistogram> current;
        try {
            base = LatencyProfileReader.read(config.base());
            current = LatencyProfileReader.read(config.current());
        } catch (LatencyProfileReader.BadProfile e) {
            err.println(NAME + ": " + e.getMessage());
            return BAD_INPUT;
        }
        LatencyComparison comparison = new LatencyComparison(config.minCalls(), config.threshold(),
                LatencyComparison.DEFAULT_ALPHA);
        List<FunctionDiff> diffs = FunctionDiff.compare(base, current, comparison);
        out.print(switch (config.format()) {
            case TABLE -> DiffTable.render(diffs, config.minCalls(), config.threshold(), LatencyComparison.DEFAULT_ALPHA);
            case JSON -> DiffJson.render(diffs);
        });
        out.flush();
        return diffs.stream().anyMatch(d -> d.status() == FunctionDiff.Status.REGRESSED) ? REGRESSED : NOT_REGRESSED;
    }
}
