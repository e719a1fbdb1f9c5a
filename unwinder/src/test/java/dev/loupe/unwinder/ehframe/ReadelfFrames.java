package dev.loupe.unwinder.ehframe;

import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The independent oracle: binutils' own decoding of a file's CFI, from {@code readelf
 * --debug-dump=frames-interp} (the rule table per FDE) and {@code readelf --debug-dump=frames} (the raw
 * instructions, for the text of CFA expressions, which the interpreted table prints only as "exp").
 */
final class ReadelfFrames {
    /** One printed row: the location and the CFA, rbp and ra columns as readelf prints them. */
    record Row(long loc, String cfa, String rbp, String ra, String rsp) {}

    /** One FDE (or CIE, with pcBegin = pcEnd = 0) of one section. */
    record Entry(String section, long offset, boolean cie, long cieOffset, long pcBegin, long pcEnd, List<Row> rows,
                 String augmentation, List<String> cfaExpressions) {}

    private static final Pattern HEADER = Pattern.compile(
            "^([0-9a-f]{8,16}) ([0-9a-f]{8,16}) ([0-9a-f]{8,16}) (CIE|FDE)(?: \"([^\"]*)\")?(?: cie=([0-9a-f]+) pc=([0-9a-f]+)\\.\\.([0-9a-f]+))?.*");
    private static final Pattern SECTION = Pattern.compile("^Contents of the (\\S+) section.*");
    private static final Pattern ROW = Pattern.compile("^([0-9a-f]{8,16}) +(\\S.*)$");

    final List<Entry> entries = new ArrayList<>();
    final Map<String, Map<Long, Entry>> cies = new HashMap<>();

    static ReadelfFrames of(Path file, Path tmp) throws IOException, InterruptedException {
        ReadelfFrames r = new ReadelfFrames();
        Path interp = tmp.resolve("frames-interp.txt");
        Path raw = tmp.resolve("frames.txt");
        run(List.of("readelf", "--debug-dump=frames-interp", file.toString()), interp);
        run(List.of("readelf", "--debug-dump=frames", file.toString()), raw);
        Map<String, Map<Long, List<String>>> exprs = expressions(raw);
        r.parse(interp, exprs);
        return r;
    }

    private static void run(List<String> cmd, Path out) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(cmd).redirectOutput(out.toFile()).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IllegalStateException(cmd + " timed out");
        }
    }

    /** Per section and entry offset: the DW_CFA_def_cfa_expression texts in the raw dump. */
    private static Map<String, Map<Long, List<String>>> expressions(Path raw) throws IOException {
        Map<String, Map<Long, List<String>>> out = new HashMap<>();
        String section = "";
        long entry = -1;
        try (BufferedReader in = Files.newBufferedReader(raw, StandardCharsets.ISO_8859_1)) {
            for (String line; (line = in.readLine()) != null; ) {
                Matcher s = SECTION.matcher(line);
                if (s.matches()) {
                    section = s.group(1);
                    continue;
                }
                Matcher h = HEADER.matcher(line);
                if (h.matches()) {
                    entry = Long.parseLong(h.group(1), 16);
                    continue;
                }
                String t = line.trim();
                if (t.startsWith("DW_CFA_def_cfa_expression")) {
                    out.computeIfAbsent(section, k -> new HashMap<>()).computeIfAbsent(entry, k -> new ArrayList<>()).add(t);
                }
            }
        }
        return out;
    }

    private void parse(Path interp, Map<String, Map<Long, List<String>>> exprs) throws IOException {
        String section = "";
        String[] columns = null;
        List<Row> rows = null;
        try (BufferedReader in = Files.newBufferedReader(interp, StandardCharsets.ISO_8859_1)) {
            for (String line; (line = in.readLine()) != null; ) {
                Matcher s = SECTION.matcher(line);
                if (s.matches()) {
                    section = s.group(1);
                    continue;
                }
                Matcher h = HEADER.matcher(line);
                if (h.matches()) {
                    boolean cie = h.group(4).equals("CIE");
                    long off = Long.parseLong(h.group(1), 16);
                    rows = new ArrayList<>();
                    columns = null;
                    List<String> ex = exprs.getOrDefault(section, Map.of()).getOrDefault(off, List.of());
                    Entry e = cie
                            ? new Entry(section, off, true, off, 0, 0, rows, h.group(5) == null ? "" : h.group(5), ex)
                            : new Entry(section, off, false, Long.parseLong(h.group(6), 16), Long.parseUnsignedLong(h.group(7), 16),
                            Long.parseUnsignedLong(h.group(8), 16), rows, null, ex);
                    entries.add(e);
                    if (cie) {
                        cies.computeIfAbsent(section, k -> new HashMap<>()).put(off, e);
                    }
                    continue;
                }
                String t = line.trim();
                if (t.endsWith("ZERO terminator")) {
                    rows = null;
                    continue;
                }
                if (t.startsWith("LOC")) {
                    columns = t.split("\\s+");
                    continue;
                }
                Matcher m = ROW.matcher(line);
                if (m.matches() && columns != null && rows != null) {
                    String[] v = values(line);
                    String cfa = null, rbp = "u", ra = "u", rsp = null;
                    for (int i = 1; i < columns.length && i < v.length; i++) {
                        switch (columns[i]) {
                            case "CFA" -> cfa = v[i];
                            case "rbp" -> rbp = v[i];
                            case "ra" -> ra = v[i];
                            case "rsp" -> rsp = v[i];
                            default -> { }
                        }
                    }
                    rows.add(new Row(Long.parseUnsignedLong(v[0], 16), cfa, rbp, ra, rsp));
                }
            }
        }
    }

    /** A row's values; a register rule prints as "r10 (r10)", one value with a space. */
    private static String[] values(String line) {
        List<String> out = new ArrayList<>();
        for (String t : line.trim().split("\\s+")) {
            if (t.startsWith("(") && !out.isEmpty()) {
                out.set(out.size() - 1, out.getLast() + " " + t);
            } else {
                out.add(t);
            }
        }
        return out.toArray(new String[0]);
    }

    /** The CIE an FDE uses. */
    Entry cieOf(Entry fde) {
        return cies.getOrDefault(fde.section(), Map.of()).get(fde.cieOffset());
    }

    List<Entry> fdes(String section) {
        return entries.stream().filter(e -> !e.cie() && e.section().equals(section)).toList();
    }

    /** ld's PLT expression as readelf prints it, with N of DW_OP_litN as group 1. */
    static final Pattern PLT = Pattern.compile(Pattern.quote("DW_CFA_def_cfa_expression (DW_OP_breg7 (rsp): 8; DW_OP_breg16 (rip): 0; "
            + "DW_OP_lit15; DW_OP_and; DW_OP_lit") + "(\\d+)" + Pattern.quote("; DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus)"));

    /**
     * The rule readelf's row implies, by the compiler's documented mapping (checked in the same order):
     * ra undefined: end of stack; a signal CIE: the kernel sigframe; CFA: rsp/rbp + offset or one of the
     * two PLT expressions (identified from readelf's own decoding of the expression); ra at c-8; rsp
     * without a rule; rbp unchanged ('u', 's', or no column) or saved at c+N, else unknown.
     * Returns null where 'u' for rbp may mean either unchanged or undefined (the caller accepts both).
     */
    static long expected(Row r, Entry fde, Entry cie) {
        if (r.ra().equals("u")) {
            return UnwindRule.stop(StopReason.END_OF_STACK);
        }
        if (cie.augmentation().contains("S")) {
            boolean kernel = r.cfa().equals("exp") && r.ra().equals("exp") && r.rbp().equals("exp");
            return kernel ? UnwindRule.cfa(UnwindRule.KIND_SIGNAL, 0, 0, 0) : UnwindRule.stop(StopReason.UNSUPPORTED_SIGNAL_FRAME);
        }
        int kind;
        long off = 0;
        if (r.cfa().equals("exp")) {
            List<String> ex = fde.cfaExpressions().isEmpty() ? cie.cfaExpressions() : fde.cfaExpressions();
            Matcher m = ex.size() == 1 ? PLT.matcher(ex.getFirst()) : null;
            if (m == null || !m.matches()) {
                return UnwindRule.stop(StopReason.UNSUPPORTED_CFA_EXPRESSION);
            }
            kind = UnwindRule.KIND_PLT;
            off = Integer.parseInt(m.group(1));
        } else {
            Matcher m = Pattern.compile("([a-z0-9]+)([+-]\\d+)").matcher(r.cfa());
            if (!m.matches()) {
                throw new IllegalStateException("unexpected CFA column " + r.cfa());
            }
            off = Long.parseLong(m.group(2));
            switch (m.group(1)) {
                case "rsp" -> kind = UnwindRule.KIND_CFA_RSP;
                case "rbp" -> kind = UnwindRule.KIND_CFA_RBP;
                default -> {
                    return UnwindRule.stop(StopReason.UNSUPPORTED_CFA_REGISTER);
                }
            }
            if (off != (int) off) {
                return UnwindRule.stop(StopReason.OFFSET_OUT_OF_RANGE);
            }
        }
        if (!r.ra().equals("c-8")) {
            return UnwindRule.stop(StopReason.UNSUPPORTED_RA_RULE);
        }
        if (r.rsp() != null && !r.rsp().equals("u") && !r.rsp().equals("v+0")) {
            return UnwindRule.stop(StopReason.UNSUPPORTED_RSP_RULE);
        }
        int rbpRule = UnwindRule.RBP_UNKNOWN;
        int rbpOff = 0;
        if (r.rbp().equals("u") || r.rbp().equals("s")) {
            rbpRule = UnwindRule.RBP_UNCHANGED;
        } else if (r.rbp().matches("c[+-]\\d+")) {
            long o = Long.parseLong(r.rbp().substring(1));
            if (o == (short) o) {
                rbpRule = UnwindRule.RBP_SAVED;
                rbpOff = (int) o;
            }
        }
        return UnwindRule.cfa(kind, off, rbpRule, rbpOff);
    }
}
