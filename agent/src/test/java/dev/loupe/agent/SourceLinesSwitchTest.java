package dev.loupe.agent;

import dev.loupe.config.CommandLine;
import dev.loupe.config.ConfigChange;
import dev.loupe.config.Options;
import dev.loupe.unwinder.symbolize.Frame;
import dev.loupe.unwinder.symbolize.Symbolizer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** --lines: the option as YAML and flag, live on reload, and one switch telling every symbolizer registered. */
class SourceLinesSwitchTest {
    /** Records what it is told. */
    static final class Recording implements Symbolizer {
        final List<Boolean> told = new ArrayList<>();

        @Override
        public int symbolizeUser(int pid, long processStartNs, long[] addrs, int count, List<Frame> out) {
            return 0;
        }

        @Override
        public void symbolizeKernel(long[] addrs, int count, List<Frame> out) {}

        @Override
        public Stats stats() {
            return new Stats(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
        }

        @Override
        public void lines(boolean on) {
            told.add(on);
        }

        @Override
        public void close() {}
    }

    @Test
    void everyRegisteredSymbolizerHearsTheSettingAndEveryChange() {
        SourceLinesSwitch s = new SourceLinesSwitch(false);
        Recording cpu = new Recording();
        Recording probes = new Recording();
        assertEquals(cpu, s.register(cpu));
        s.set(true);
        s.register(probes);
        s.set(false);
        assertEquals(List.of(false, true, false), cpu.told);
        assertEquals(List.of(true, false), probes.told);
    }

    @Test
    void linesIsOnByDefaultOffByFlagOrYamlAndReloadable(@TempDir Path dir) throws Exception {
        assertTrue(CommandLine.parse(new String[] {}).config().lines());
        assertFalse(CommandLine.parse(new String[] {"--lines", "off"}).config().lines());
        Path yaml = Files.writeString(dir.resolve("loupe.yaml"), "lines: off\n");
        var before = CommandLine.parse(new String[] {"--config", yaml.toString()}).config();
        assertFalse(before.lines());
        Files.writeString(yaml, "lines: on\n");
        var after = CommandLine.parse(new String[] {"--config", yaml.toString()}).config();
        ConfigChange change = ConfigChange.between(before, after);
        assertTrue(change.changedLive(Options.LINES), change.describe());
        assertTrue(before.reloadedWith(after).lines());
    }
}
