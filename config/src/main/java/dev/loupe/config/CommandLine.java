package dev.loupe.config;

import picocli.CommandLine.MissingParameterException;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.Model.PositionalParamSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.ParseResult;
import picocli.CommandLine.UnmatchedArgumentException;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * The flags of {@code loupe run}, {@code loupe relay} and {@code loupe latency-diff} (and the latter's two files),
 * read by picocli from the option table ({@link Options}):
 * {@code --flag value} or {@code --flag=value}; a repeated flag's last value wins unless the option collects them.
 * Layers: the declared defaults, then the {@code --config} file, then the flags.
 */
public final class CommandLine {
    /** @param help {@code --help} was given: print {@link #usage()} and do nothing else */
    public record Parsed(boolean help, LoupeConfig config) {}

    /** @param help {@code --help} was given: print {@link #usage(Command)} and do nothing else */
    public record ParsedRelay(boolean help, RelayConfig config) {}

    /** @param help {@code --help} was given: print {@link #usage(Command)} and do nothing else */
    public record ParsedLatencyDiff(boolean help, LatencyDiffConfig config) {}

    private static final int USAGE_WIDTH = 110;

    private CommandLine() {}

    /** {@code loupe run}'s help. */
    public static String usage() {
        return usage(Command.RUN);
    }

    public static String usage(Command command) {
        return cli(command).getUsageMessage();
    }

    /** {@code loupe run}'s arguments. */
    public static Parsed parse(String[] args) throws ConfigException {
        Layers l = layers(Command.RUN, args);
        if (l.help) {
            return new Parsed(true, LoupeConfig.defaults());
        }
        return new Parsed(false, LoupeConfig.build(l.values, l.file, l.sourceName()));
    }

    /** {@code loupe relay}'s arguments. */
    public static ParsedRelay parseRelay(String[] args) throws ConfigException {
        Layers l = layers(Command.RELAY, args);
        if (l.help) {
            return new ParsedRelay(true, null);
        }
        return new ParsedRelay(false, RelayConfig.build(l.values, l.file, l.sourceName()));
    }

    /** {@code loupe latency-diff}'s arguments: its flags over its --config file (e.g. the agent's), and the two profiles. */
    public static ParsedLatencyDiff parseLatencyDiff(String[] args) throws ConfigException {
        Layers l = layers(Command.LATENCY_DIFF, args);
        if (l.help) {
            return new ParsedLatencyDiff(true, null);
        }
        return new ParsedLatencyDiff(false, LatencyDiffConfig.build(l.values, l.operands));
    }

    /** @param operands the positional arguments, as many as the command declares */
    private record Layers(boolean help, OptionValues values, Optional<Path> file, List<String> operands) {
        String sourceName() {
            return file.map(Path::toString).orElse("command line");
        }
    }

    private static Layers layers(Command command, String[] args) throws ConfigException {
        ParseResult parsed;
        try {
            parsed = cli(command).parseArgs(args);
        } catch (ParameterException e) {
            throw flagError(command, e);
        }
        if (parsed.isUsageHelpRequested()) {
            return new Layers(true, null, Optional.empty(), List.of());
        }
        Optional<Path> file = Optional.empty();
        if (parsed.hasMatchedOption(Options.CONFIG.flag())) {
            file = Optional.of(read(Options.CONFIG, parsed, null));
        }
        OptionValues values = file.isPresent() ? ConfigLoader.loadValues(file.get()) : ConfigLoader.defaultValues();
        List<String> remoteStoreFlags = new ArrayList<>();
        for (Option<?> o : Options.ALL) {
            if (o != Options.CONFIG && o.flag() != null && o.commands().contains(command) && parsed.hasMatchedOption(o.flag())) {
                apply(values, o, parsed);
                if (o.key() != null && o.key().startsWith("remote-store.")) {
                    remoteStoreFlags.add(o.flag());
                }
            }
        }
        if (!remoteStoreFlags.isEmpty() && values.get(Options.REMOTE_STORE_ADDRESS).isEmpty()) {
            throw new ConfigException(Options.REMOTE_STORE_ADDRESS.flag(), 0, "missing: the other --remote-store-* flags need it");
        }
        List<String> operands = parsed.matchedPositionals().stream().map(p -> (String) p.getValue()).toList();
        return new Layers(false, values, file, operands);
    }

    private static <T> void apply(OptionValues values, Option<T> o, ParseResult parsed) throws ConfigException {
        values.set(o, read(o, parsed, values.get(o)));
    }

    private static <T> T read(Option<T> o, ParseResult parsed, T current) throws ConfigException {
        List<String> given = parsed.matchedOption(o.flag()).getValue();
        try {
            return o.readFlags(given, current);
        } catch (IllegalArgumentException e) {
            throw new ConfigException(o.flag(), 0, e.getMessage());
        }
    }

    private static ConfigException flagError(Command command, ParameterException e) {
        if (e instanceof UnmatchedArgumentException u && !u.getUnmatched().isEmpty()) {
            String arg = u.getUnmatched().getFirst();
            if (!arg.startsWith("-")) {
                return new ConfigException(arg, 0, "unexpected argument (options start with --; see --help)");
            }
            String name = arg.contains("=") ? arg.substring(0, arg.indexOf('=')) : arg;
            List<String> flags = Options.ALL.stream().filter(o -> o.flag() != null && o.commands().contains(command))
                    .map(Option::flag).toList();
            String hint = ConfigLoader.closest(name, flags).map(c -> " (did you mean " + c + "?)").orElse("");
            return new ConfigException(name, 0, "unknown option" + hint + "; see --help");
        }
        if (e instanceof MissingParameterException m && !m.getMissing().isEmpty()
                && m.getMissing().getFirst() instanceof OptionSpec spec) {
            return new ConfigException(spec.longestName(), 0, "needs a value");
        }
        if (e instanceof MissingParameterException m && !m.getMissing().isEmpty()
                && m.getMissing().getFirst() instanceof PositionalParamSpec first) {
            // picocli names the first missing operand; the ones after it are missing too
            List<Command.Operand> operands = command.operands();
            String missing = operands.subList(first.index().min(), operands.size()).stream().map(Command.Operand::label)
                    .collect(Collectors.joining(" "));
            return new ConfigException(missing, 0, "missing (see --help)");
        }
        return new ConfigException("loupe " + command.word(), 0, e.getMessage());
    }

    /** The command's flags as picocli options: every occurrence is kept and handed to the option's own reader. */
    private static picocli.CommandLine cli(Command command) {
        CommandSpec spec = CommandSpec.create().name("loupe " + command.word());
        spec.usageMessage().customSynopsis(command.synopsis()).description(command.description()).width(USAGE_WIDTH)
                .descriptionHeading("%n").optionListHeading("%nOptions:%n").sortOptions(false);
        for (Option<?> o : Options.ALL) {
            if (o.flag() == null || !o.commands().contains(command)) {
                continue;
            }
            OptionSpec.Builder b = OptionSpec.builder(o.flag()).paramLabel(o.label()).type(List.class)
                    .auxiliaryTypes(String.class).description(o.helpText() + defaultNote(o));
            if (o.flagTakesNoValue()) {
                b.arity("0..1").fallbackValue("true");
            } else {
                b.arity("1");
            }
            spec.addOption(b.build());
        }
        List<Command.Operand> operands = command.operands();
        for (int i = 0; i < operands.size(); i++) {
            spec.addPositional(PositionalParamSpec.builder().index(String.valueOf(i)).arity("1").required(true)
                    .type(String.class).paramLabel(operands.get(i).label()).description(operands.get(i).description())
                    .build());
        }
        if (!operands.isEmpty()) {
            spec.usageMessage().parameterListHeading("%nArguments:%n");
        }
        spec.addOption(OptionSpec.builder("-h", "--help").usageHelp(true).description("show this help").build());
        picocli.CommandLine cli = new picocli.CommandLine(spec);
        cli.setExpandAtFiles(false); // an argument starting with @ is a value, never a file of more arguments
        return cli;
    }

    private static String defaultNote(Option<?> o) {
        String d = o.defaultYaml();
        if (d == null || d.equals("\"\"") || d.equals("[]") || d.equals("{}")) {
            return "";
        }
        return " (default " + d + ")";
    }
}
