package dev.loupe.unwinder.python;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@link LineTable#lnotab39} against Debian 11's CPython 3.9: every instruction's line as {@code dis.findlinestarts} says. */
class LineTable39Test {
    @TempDir
    Path dir;

    @Test
    void everyInstructionOfStdlibModulesHasTheInterpretersLine() throws Exception {
        try (PythonTargets.Target t = PythonTargets.start(PythonTargets.BULLSEYE, Path.of("/usr/bin/python3.9"), dir, "lines",
                "argparse", "json.decoder", "typing")) {
            Map<String, byte[]> tables = new HashMap<>();
            Map<String, Integer> first = new HashMap<>();
            long checked = 0;
            for (String l : t.lines()) {
                String[] f = l.split(" ", 5);
                switch (f[0]) {
                    case "code" -> first.put(f[1], Integer.parseInt(f[3]));
                    case "table" -> tables.put(f[1], HexFormat.of().parseHex(f.length > 2 ? f[2] : ""));
                    case "line" -> {
                        assertEquals(Integer.parseInt(f[3]), LineTable.lnotab39(tables.get(f[1]), first.get(f[1]),
                                Integer.parseInt(f[2])), "code " + f[1] + " offset " + f[2]);
                        checked++;
                    }
                    default -> { }
                }
            }
            System.out.println("lnotab: " + tables.size() + " code objects, " + checked + " instructions");
            assertTrue(tables.size() > 300 && checked > 10_000, tables.size() + " code objects, " + checked + " instructions");
        }
    }
}
