package dev.loupe.config;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * What the option table says, written out: default.yaml (also the defaults' source: it is parsed like a user's
 * file) and docs/configuration.md. ConfigDocsTest fails when the committed copies differ.
 */
public final class ConfigDocs {
    private static final int COMMENT_COLUMN = 30;

    private ConfigDocs() {}

    /** Every YAML key with its default and help, nested as a file would be. */
    public static String defaultYaml() {
        StringBuilder b = new StringBuilder();
        b.append("# Loupe's defaults, generated from the option table (config/src/main/java/dev/loupe/config/Options.java);\n");
        b.append("# docs/configuration.md lists every option with its flag. A --config file overrides any of these keys and\n");
        b.append("# command-line flags override both. One file may serve loupe run and loupe relay: a key is loupe run's\n");
        b.append("# unless marked [relay] (loupe relay's only) or [run, relay] (both read it).\n");
        Map<String, List<Option<?>>> byTop = new LinkedHashMap<>();
        for (Option<?> o : Options.ALL) {
            if (o.hasYaml()) {
                byTop.computeIfAbsent(top(o.key()), t -> new ArrayList<>()).add(o);
            }
        }
        for (var e : byTop.entrySet()) {
            List<Option<?>> options = e.getValue();
            if (options.size() == 1 && options.getFirst().key().equals(e.getKey())) {
                line(b, "", e.getKey(), options.getFirst());
                continue;
            }
            String section = Options.SECTIONS.get(e.getKey());
            if (section != null) {
                b.append("# ").append(section).append('\n');
            }
            b.append(e.getKey()).append(":\n");
            for (Option<?> o : options) {
                line(b, "  ", o.key().substring(e.getKey().length() + 1), o);
            }
        }
        return b.toString();
    }

    private static void line(StringBuilder b, String indent, String name, Option<?> o) {
        String entry = indent + name + ": " + o.defaultYaml();
        b.append(entry).append(" ".repeat(Math.max(1, COMMENT_COLUMN - entry.length()))).append("# ").append(o.helpText())
                .append(onlyFor(o)).append('\n');
    }

    private static String onlyFor(Option<?> o) {
        Set<Command> c = o.commands();
        return c.equals(Set.of(Command.RUN)) ? "" : " [" + c.stream().map(Command::word).collect(Collectors.joining(", ")) + "]";
    }

    private static String top(String key) {
        int dot = key.indexOf('.');
        return dot < 0 ? key : key.substring(0, dot);
    }

    /** docs/configuration.md: one row per option. */
    public static String markdown() {
        StringBuilder b = new StringBuilder();
        b.append("# Configuration\n\n");
        b.append("Generated from the option table, `config/src/main/java/dev/loupe/config/Options.java`; `ConfigDocsTest` fails\n");
        b.append("when this file or `default.yaml` is stale, and rewrites both when run with `-Dloupe.regenerate=true`:\n");
        b.append("`mvn -pl config test -Dtest=ConfigDocsTest -Dloupe.regenerate=true`.\n\n");
        b.append("Each option has a key in the YAML file given with `--config`, a flag, or both. Flags override the file,\n");
        b.append("which overrides the defaults. A repeated flag's last value wins, except where the table says it repeats.\n");
        b.append("\"Reload\" says whether a new value may be applied by a reload (SIGHUP) without a restart.\n\n");
        b.append("| YAML key | Flag | Default | Reload | Commands | What it does |\n");
        b.append("|---|---|---|---|---|---|\n");
        for (Option<?> o : Options.ALL) {
            b.append("| ").append(o.hasYaml() ? "`" + o.key() + "`" : "")
                    .append(" | ").append(o.flag() == null ? "" : "`" + o.flag() + (o.flagTakesNoValue() ? "[=" + o.label() + "]"
                            : " " + o.label()).replace("|", "\\|") + "`")
                    .append(" | ").append(o.defaultYaml() == null ? "" : "`" + o.defaultYaml() + "`")
                    .append(" | ").append(o.isReloadable() ? "yes" : "no")
                    .append(" | ").append(o.commands().stream().map(Command::word).collect(Collectors.joining(", ")))
                    .append(" | ").append(o.helpText())
                    .append(" |\n");
        }
        return b.toString();
    }
}
