package dev.loupe.unwinder.symbolize;

import dev.loupe.unwinder.elf.SymbolTable;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.function.LongSupplier;

/** Kernel text symbols from /proc/kallsyms (core kernel and modules), sorted for lookup. */
final class KernelSymbols {
    static final String MAPPING_NAME = "[kernel.kallsyms]";
    /** kallsyms has no sizes: the last symbol (usually in a module) is given this much room. */
    static final long LAST_SYMBOL_SLACK = 1 << 20;

    final SymbolTable table;
    final long lowest;
    final long highest;
    /** Lines were there but every address was zero: kptr_restrict hides them from us. */
    final boolean restricted;
    /** One instance for every kernel frame (consumers cache by identity); null without symbols. */
    final MappingRef ref;

    private KernelSymbols(SymbolTable table, long lowest, long highest, boolean restricted, MappingRef ref) {
        this.table = table;
        this.lowest = lowest;
        this.highest = highest;
        this.restricted = restricted;
        this.ref = ref;
    }

    private KernelSymbols(SymbolTable table, long lowest, long highest, boolean restricted) {
        this(table, lowest, highest, restricted,
                table.size() == 0 ? null : new MappingRef(lowest, highest + LAST_SYMBOL_SLACK, 0, MAPPING_NAME, null, true));
    }

    /** This table with {@code previous}'s MappingRef instance when the range is unchanged (a reload). */
    KernelSymbols keepingRef(KernelSymbols previous) {
        if (previous == null || previous.ref == null || !previous.ref.equals(ref)) {
            return this;
        }
        return new KernelSymbols(table, lowest, highest, restricted, previous.ref);
    }

    /**
     * Streams the file through a 64 KiB buffer: /proc/kallsyms is ~5 MB and reports size 0, so reading
     * it whole would grow an array by doubling to 8 MB at start, which the heap then keeps committed.
     */
    static KernelSymbols load(Path kallsyms) throws IOException {
        Parser p = new Parser();
        try (InputStream in = Files.newInputStream(kallsyms)) {
            byte[] buf = new byte[64 * 1024];
            int have = 0;
            while (true) {
                int r = in.read(buf, have, buf.length - have);
                if (r < 0) {
                    break;
                }
                have += r;
                int consumed = p.lines(buf, 0, have, false);
                if (consumed == 0 && have == buf.length) {
                    buf = Arrays.copyOf(buf, buf.length * 2); // a line longer than the buffer
                    continue;
                }
                System.arraycopy(buf, consumed, buf, 0, have - consumed);
                have -= consumed;
            }
            p.lines(buf, 0, have, true);
        }
        return p.result();
    }

    /**
     * Lines {@code ffffffff81000000 T _stext} or {@code ffffffffc0a01000 t fn\t[module]}: text symbols
     * (t, T, w, W) only. Parsed from bytes: ~200k lines, done at start and on module loads.
     */
    static KernelSymbols parse(byte[] text) {
        Parser p = new Parser();
        p.lines(text, 0, text.length, true);
        return p.result();
    }

    private static final class Parser {
        private final SymbolTable.Builder b = new SymbolTable.Builder();
        private long lo = -1;
        private long hi = 0;
        private boolean anyNonZero;
        private int lines;

        /** Parses the complete lines in [from, to) (and a final unterminated one when {@code last}); returns the end of the last one parsed. */
        int lines(byte[] text, int from, int to, boolean last) {
            int pos = from;
            while (pos < to) {
                int eol = pos;
                while (eol < to && text[eol] != '\n') {
                    eol++;
                }
                if (eol == to && !last) {
                    return pos;
                }
                line(text, pos, eol);
                pos = eol + 1;
            }
            return Math.min(pos, to);
        }

        private void line(byte[] text, int line, int eol) {
            lines++;
            // hex address, ' ', type, ' ', name [ '\t' [module] ]
            long addr = 0;
            int i = line;
            int digits = 0;
            for (; i < eol && text[i] != ' '; i++, digits++) {
                int d = Character.digit(text[i], 16);
                if (d < 0 || digits >= 16) {
                    digits = -1;
                    break;
                }
                addr = addr << 4 | d;
            }
            if (digits <= 0 || i + 3 > eol || text[i + 2] != ' ') {
                return;
            }
            char type = (char) text[i + 1];
            if (type != 't' && type != 'T' && type != 'w' && type != 'W') {
                return;
            }
            if (addr == 0) {
                return; // kptr_restrict shows zeros
            }
            anyNonZero = true;
            int nameStart = i + 3;
            int nameEnd = nameStart;
            while (nameEnd < eol && text[nameEnd] != '\t' && text[nameEnd] != ' ') {
                nameEnd++;
            }
            if (nameEnd == nameStart) {
                return;
            }
            b.add(addr, 0, type == 'T' ? SymbolTable.Builder.GLOBAL : type == 't' ? SymbolTable.Builder.LOCAL : SymbolTable.Builder.WEAK, text, nameStart, nameEnd - nameStart);
            if (lo == -1 || Long.compareUnsigned(addr, lo) < 0) {
                lo = addr;
            }
            if (Long.compareUnsigned(addr, hi) > 0) {
                hi = addr;
            }
        }

        KernelSymbols result() {
            boolean restricted = lines > 0 && !anyNonZero;
            return new KernelSymbols(b.build(), lo, hi, restricted);
        }
    }

    boolean covers(long addr) {
        return table.size() > 0 && Long.compareUnsigned(addr, lowest) >= 0
                && Long.compareUnsigned(addr, highest + LAST_SYMBOL_SLACK) < 0;
    }

    /**
     * The kernel's symbols as last read from a kallsyms file: read at first use and again (at most every
     * 2 min) when an address falls outside them (a module loaded since). An unreadable or restricted file is
     * warned about once. {@link #get} runs on one thread; {@link #current} may be read from any.
     */
    static final class Loader {
        /** The symbolizer's logger: one logger name for all its messages. */
        private static final System.Logger LOG = System.getLogger(ProcSymbolizer.class.getName());
        private static final long RELOAD_NANOS = Duration.ofMinutes(2).toNanos();

        private final Path kallsyms;
        private final LongSupplier nanoTime;
        private volatile KernelSymbols current;
        private long loadedAt = Long.MIN_VALUE;
        private boolean warned;

        Loader(Path kallsyms, LongSupplier nanoTime) {
            this.kallsyms = kallsyms;
            this.nanoTime = nanoTime;
        }

        /** The symbols, read now if never read, or if {@code missed} (an address outside them) and 2 min have passed. */
        KernelSymbols get(boolean missed) {
            long now = nanoTime.getAsLong();
            KernelSymbols k = current;
            boolean due = loadedAt == Long.MIN_VALUE || (k == null || missed) && now - loadedAt > RELOAD_NANOS;
            if (due) {
                loadedAt = now;
                try {
                    // Same range as before: keep the MappingRef instance (consumers key mappings by identity).
                    KernelSymbols fresh = load(kallsyms).keepingRef(k);
                    if (fresh.restricted && !warned) {
                        warned = true;
                        LOG.log(System.Logger.Level.WARNING, kallsyms + " shows only zero addresses (kptr_restrict;"
                                + " needs root or CAP_SYSLOG): kernel frames stay addresses");
                    }
                    current = fresh;
                    k = fresh;
                } catch (IOException | RuntimeException e) {
                    if (!warned) {
                        warned = true;
                        LOG.log(System.Logger.Level.WARNING, "cannot read " + kallsyms + ": " + e + "; kernel frames stay addresses");
                    }
                }
            }
            return k;
        }

        /** The symbols as last read, or null. */
        KernelSymbols current() {
            return current;
        }
    }
}
