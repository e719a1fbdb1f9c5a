package dev.loupe.unwinder.golang;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Ground truth: every instruction of a section as {@code objdump -d} (binutils) decodes it. */
final class Objdump {
    private static final Pattern LINE = Pattern.compile("^\\s*([0-9a-f]+):\\t((?:[0-9a-f]{2} )+)\\s*\\t?(.*)$");
    private static final Set<String> RETURNS = Set.of("ret", "retq", "retl", "retw", "lret", "lretq", "lretl", "lretw");

    final long[] addrs;
    final int[] lengths;
    final boolean[] isReturn;
    final boolean[] bad;
    final int count;

    private Objdump(long[] addrs, int[] lengths, boolean[] isReturn, boolean[] bad, int count) {
        this.addrs = addrs;
        this.lengths = lengths;
        this.isReturn = isReturn;
        this.bad = bad;
        this.count = count;
    }

    /** {@code objdump -d -z -w --insn-width=16 -j SECTION FILE}: one line per instruction, zeros included. */
    static Objdump disassemble(Path file, String section) throws Exception {
        List<String> cmd = List.of("objdump", "-d", "-z", "-w", "--insn-width=16", "-j", section, file.toString());
        Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        long[] a = new long[1 << 16];
        int[] l = new int[1 << 16];
        boolean[] r = new boolean[1 << 16];
        boolean[] b = new boolean[1 << 16];
        int n = 0;
        try (BufferedReader in = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.US_ASCII), 1 << 16)) {
            for (String line; (line = in.readLine()) != null; ) {
                Matcher m = LINE.matcher(line);
                if (!m.matches()) {
                    continue;
                }
                if (n == a.length) {
                    a = Arrays.copyOf(a, n * 2);
                    l = Arrays.copyOf(l, n * 2);
                    r = Arrays.copyOf(r, n * 2);
                    b = Arrays.copyOf(b, n * 2);
                }
                a[n] = Long.parseUnsignedLong(m.group(1), 16);
                l[n] = m.group(2).length() / 3;
                String mnemonic = m.group(3);
                boolean ret = false;
                for (String tok : mnemonic.split("\\s+")) {
                    if (RETURNS.contains(tok)) {
                        ret = true;
                        break;
                    }
                    if (tok.contains("%") || tok.contains("$") || tok.contains("(")) {
                        break; // operands
                    }
                }
                r[n] = ret;
                b[n] = mnemonic.contains("(bad)");
                n++;
            }
        }
        if (!p.waitFor(300, TimeUnit.SECONDS) || p.exitValue() != 0) {
            p.destroyForcibly();
            throw new IllegalStateException(cmd + " failed");
        }
        return new Objdump(a, l, r, b, n);
    }

    /** Index of the first instruction at or after {@code addr}. */
    int indexAtOrAfter(long addr) {
        int lo = 0;
        int hi = count;
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (Long.compareUnsigned(addrs[mid], addr) < 0) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo;
    }
}
