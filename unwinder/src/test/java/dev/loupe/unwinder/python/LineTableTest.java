package dev.loupe.unwinder.python;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.HexFormat;
import java.util.HashMap;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link LineTable#line311} against CPython 3.11's own {@code co_positions()}: every code unit of every code object of a
 * few standard modules (thousands of functions, every entry form of the location table), the line the interpreter
 * says and the line the reader says, equal.
 */
class LineTableTest {
    @TempDir
    Path dir;

    @Test
    void everyCodeUnitOfStdlibModulesHasTheInterpretersLine() throws Exception {
        try (PythonTargets.Target t = PythonTargets.start(PythonTargets.PYTHON311, dir, "lines", "argparse", "json.decoder",
                "asyncio.base_events", "typing", "dataclasses")) {
            Map<String, byte[]> tables = new HashMap<>();
            Map<String, Integer> first = new HashMap<>();
            long checked = 0;
            long withLine = 0;
            for (String l : t.lines()) {
                String[] f = l.split(" ", 5);
                switch (f[0]) {
                    case "code" -> first.put(f[1], Integer.parseInt(f[3]));
                    case "table" -> tables.put(f[1], HexFormat.of().parseHex(f.length > 2 ? f[2] : ""));
                    case "line" -> {
                        int index = Integer.parseInt(f[2]);
                        int line = Integer.parseInt(f[3]);
                        assertEquals(line, LineTable.line311(tables.get(f[1]), first.get(f[1]), index), "code " + f[1]
                                + " index " + index);
                        checked++;
                        withLine += line != 0 ? 1 : 0;
                    }
                    default -> { }
                }
            }
            assertTrue(tables.size() > 700, tables.size() + " code objects");
            System.out.println("line table: " + tables.size() + " code objects, " + checked + " code units");
            assertTrue(checked > 20_000 && withLine > checked / 2, checked + " code units, " + withLine + " with a line");
        }
    }

    @Test
    void truncatedOrForeignTablesGiveNoLine() {
        // One long-form entry (code 14) of 2 code units: line +3, end line, columns; then cut at every byte.
        byte[] table = {(byte) (0x80 | 14 << 3 | 1), 6, 0, 5, 9};
        assertEquals(13, LineTable.line311(table, 10, 1));
        for (int cut = 0; cut < table.length; cut++) {
            assertEquals(0, LineTable.line311(java.util.Arrays.copyOf(table, cut), 10, 1), "cut at " + cut);
        }
        assertEquals(0, LineTable.line311(new byte[] {0x10, 0x20}, 10, 0), "no entry's first byte");
        assertEquals(0, LineTable.line311(table, 10, 2), "past the table");
        assertEquals(0, LineTable.line311(table, 10, -1), "no index");
    }
}
