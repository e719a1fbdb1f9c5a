package dev.loupe.config;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.stream.Collectors;

/**
 * What a reload would change: the options whose value differs between the running settings and the ones just
 * read, split by whether the option table says they may change live ({@link Option#isReloadable()}).
 *
 * @param live         options a reload applies
 * @param needRestart  options whose new value waits for a restart (the running value stays)
 */
public record ConfigChange(List<Option<?>> live, List<Option<?>> needRestart) {
    public ConfigChange {
        live = List.copyOf(live);
        needRestart = List.copyOf(needRestart);
    }

    public static ConfigChange between(LoupeConfig running, LoupeConfig loaded) {
        List<Option<?>> live = new ArrayList<>();
        List<Option<?>> restart = new ArrayList<>();
        for (Option<?> o : Options.ALL) {
            if (o == Options.CONFIG || !o.commands().contains(Command.RUN)) {
                continue;
            }
            if (!Objects.equals(running.get(o), loaded.get(o))) {
                (o.isReloadable() ? live : restart).add(o);
            }
        }
        return new ConfigChange(live, restart);
    }

    public boolean isEmpty() {
        return live.isEmpty() && needRestart.isEmpty();
    }

    /** Whether any of these options changed live. */
    public boolean changedLive(Option<?>... options) {
        for (Option<?> o : options) {
            if (live.contains(o)) {
                return true;
            }
        }
        return false;
    }

    /** Whether any live change is an option whose key starts with this prefix (e.g. {@code remote-store.}). */
    public boolean changedLiveUnder(String keyPrefix) {
        return live.stream().anyMatch(o -> o.key() != null && o.key().startsWith(keyPrefix));
    }

    /** One line for the log: "applied: a, b; needs a restart: c". */
    public String describe() {
        if (isEmpty()) {
            return "nothing changed";
        }
        StringBuilder b = new StringBuilder();
        if (!live.isEmpty()) {
            b.append("applied: ").append(names(live));
        }
        if (!needRestart.isEmpty()) {
            b.append(b.isEmpty() ? "" : "; ").append("needs a restart (the running value stays): ").append(names(needRestart));
        }
        return b.toString();
    }

    private static String names(List<Option<?>> options) {
        return options.stream().map(Option::toString).collect(Collectors.joining(", "));
    }
}
