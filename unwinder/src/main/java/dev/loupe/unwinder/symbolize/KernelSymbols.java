package dev.loupe.unwinder.symbolize;

import dev.loupe.unwinder.elf.SymbolTable;

import java.io.BufferedReader;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** Kernel text symbols from /proc/kallsyms (core kernel and modules), sorted for lookup. */
final class KernelSymbols {
    static final String MAPPING_NAME = "[kernel.kallsyms]";

    final SymbolTable table;
    final long lowest;
    final long highest;
    final boolean restricted;
    /** One instance for every kernel frame (consumers cache by identity); null without symbols. */
    final MappingRef ref;

    private KernelSymbols(SymbolTable table, long lowest, long highest, boolean restricted) {
        this.table = table;
        this.lowest = lowest;
        this.highest = highest;
        this.restricted = restricted;
        this.ref = table.size() == 0 ? null : new MappingRef(lowest, highest + LAST_SYMBOL_SLACK, 0, MAPPING_NAME, null, true);
    }

    static KernelSymbols load(Path kallsyms) throws IOException {
        SymbolTable.Builder b = new SymbolTable.Builder();
        long lo = -1;
        long hi = 0;
        boolean anyNonZero = false;
        int lines = 0;
        try (BufferedReader r = Files.newBufferedReader(kallsyms)) {
            String line;
            while ((line = r.readLine()) != null) {
                lines++;
                // "ffffffff81000000 T _stext" or "ffffffffc0a01000 t fn\t[module]"
                int s1 = line.indexOf(' ');
                if (s1 <= 0 || s1 + 3 > line.length() || line.charAt(s1 + 2) != ' ') {
                    continue;
                }
                char type = line.charAt(s1 + 1);
                if (type != 't' && type != 'T' && type != 'w' && type != 'W') {
                    continue;
                }
                long addr;
                try {
                    addr = Long.parseUnsignedLong(line, 0, s1, 16);
                } catch (NumberFormatException e) {
                    continue;
                }
                if (addr == 0) {
                    continue;
                }
                anyNonZero = true;
                int tab = line.indexOf('\t', s1 + 3);
                String name = tab < 0 ? line.substring(s1 + 3) : line.substring(s1 + 3, tab);
                b.add(addr, 0, name);
                if (lo == -1 || Long.compareUnsigned(addr, lo) < 0) {
                    lo = addr;
                }
                if (Long.compareUnsigned(addr, hi) > 0) {
                    hi = addr;
                }
            }
        }
        boolean restricted = lines > 0 && !anyNonZero;
        return new KernelSymbols(b.build(), lo, hi, restricted);
    }

    /** kallsyms has no sizes: the last symbol (usually in a module) is given this much room. */
    static final long LAST_SYMBOL_SLACK = 1 << 20;

    boolean covers(long addr) {
        return table.size() > 0 && Long.compareUnsigned(addr, lowest) >= 0
                && Long.compareUnsigned(addr, highest + LAST_SYMBOL_SLACK) < 0;
    }

    long limit() {
        return highest + LAST_SYMBOL_SLACK;
    }
}
