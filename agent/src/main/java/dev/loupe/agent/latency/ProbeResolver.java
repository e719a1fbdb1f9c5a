package dev.loupe.agent.latency;

import dev.loupe.bpf.ProbeSpec;
import dev.loupe.config.ProbeConfig;
import dev.loupe.unwinder.golang.FunctionResolutionException;
import dev.loupe.unwinder.golang.FunctionResolver;
import dev.loupe.unwinder.golang.GoBinaryException;
import dev.loupe.unwinder.golang.GoRuntimeOffsets;
import dev.loupe.unwinder.proc.FileKey;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Turns configured probes into kernel probe specs: each pattern resolved to functions (entry and RET file
 * offsets), Go binaries get an entry uprobe plus a uprobe on every RET (never a uretprobe: it rewrites a
 * return address on a stack Go moves), with the goid offset and where g lives; other code gets a
 * uretprobe. Everything that cannot be probed becomes one problem line (no exception escapes).
 */
final class ProbeResolver {
    /** What was planned: the functions to attach, the lines to log about the rest. */
    /**
     * @param missing binary-path probes whose file does not exist yet (planned again when it appears)
     */
    record Plan(List<ProbedFunction> functions, List<String> notes, List<String> problems, List<ProbeConfig> missing) {}

    private final int maxFunctions;
    private final Path procRoot;
    private int nextId;
    private int plannedTotal;
    private final Set<String> seen = new HashSet<>(); // binary label + function: each is probed once

    /**
     * @param maxFunctions most functions a pattern may match, and all probes together
     * @param procRoot     normally /proc (where pid= probes find their executable)
     * @param firstId      first probe id to hand out (ids are never reused)
     */
    ProbeResolver(int maxFunctions, Path procRoot, int firstId) {
        this.maxFunctions = maxFunctions;
        this.procRoot = procRoot;
        this.nextId = firstId;
    }

    /** Plans {@code configs}; the cap counts what earlier calls planned too, and no function is planned twice. */
    Plan plan(List<ProbeConfig> configs) {
        List<ProbedFunction> out = new ArrayList<>();
        List<String> notes = new ArrayList<>();
        List<String> problems = new ArrayList<>();
        List<ProbeConfig> missing = new ArrayList<>();
        Map<Path, Optional<GoRuntimeOffsets>> goOffsets = new HashMap<>();
        Map<Path, FileBuild> builds = new HashMap<>();
        for (ProbeConfig c : configs) {
            Path file;
            String label;
            int pid;
            if (c.pid().isPresent()) {
                pid = c.pid().getAsInt();
                file = procRoot.resolve(Integer.toString(pid)).resolve("exe");
                try {
                    label = Files.readSymbolicLink(file).toString();
                } catch (IOException | UnsupportedOperationException e) {
                    problems.add("probe pid=" + pid + ": no such process (or its executable cannot be read): " + e.getMessage());
                    continue;
                }
            } else {
                pid = -1;
                file = c.binary().orElseThrow();
                label = file.toString();
                if (!Files.isRegularFile(file)) {
                    problems.add("probe " + file + ": no such file yet; it is probed when it appears");
                    missing.add(c);
                    continue;
                }
            }
            FileBuild fileBuild = builds.computeIfAbsent(file, ProbeResolver::fileBuild);
            for (String pattern : c.functions()) {
                FunctionResolver.Resolution r;
                try {
                    r = FunctionResolver.resolve(file, pattern, maxFunctions);
                } catch (FunctionResolutionException e) {
                    problems.add("probe " + c.target() + ": " + e.getMessage());
                    continue;
                } catch (GoBinaryException | IOException | RuntimeException e) {
                    problems.add("probe " + c.target() + ": cannot read " + label + ": " + e);
                    continue;
                }
                GoRuntimeOffsets go = null;
                if (r.go()) {
                    try {
                        Optional<GoRuntimeOffsets> o = goOffsets.get(file);
                        if (o == null) {
                            o = GoRuntimeOffsets.read(file);
                            goOffsets.put(file, o);
                        }
                        go = o.orElse(null);
                    } catch (GoBinaryException | IOException | RuntimeException e) {
                        problems.add("probe " + c.target() + ": '" + pattern + "': Go binary, but where the goroutine id is cannot be told: "
                                + e.getMessage());
                        goOffsets.put(file, Optional.empty());
                        continue;
                    }
                    if (go == null) {
                        problems.add("probe " + c.target() + ": '" + pattern + "': Go binary, but where the goroutine id is cannot be told");
                        continue;
                    }
                }
                List<FunctionResolver.ProbeTarget> fresh = new ArrayList<>();
                for (FunctionResolver.ProbeTarget t : r.functions()) {
                    if (seen.add(label + "\u0000" + t.name())) {
                        fresh.add(t);
                    }
                }
                if (plannedTotal + fresh.size() > maxFunctions) {
                    problems.add("probe " + c.target() + ": '" + pattern + "' matches " + fresh.size() + " more functions, but "
                            + plannedTotal + " are already probed and the limit is " + maxFunctions
                            + " (probes-max-functions); none of them attached");
                    continue;
                }
                List<String> unsafe = new ArrayList<>();
                String reason = null;
                int rets = 0;
                int planned = 0;
                for (FunctionResolver.ProbeTarget t : fresh) {
                    ProbeSpec spec;
                    if (go != null) {
                        long[] offs = t.returnFileOffsets();
                        if (offs.length == 0 || t.problem().isPresent()) {
                            unsafe.add(t.name());
                            reason = reason != null ? reason : t.problem().orElse("no RET instruction found (only tail jumps?)");
                            continue;
                        }
                        List<Long> retList = new ArrayList<>(offs.length);
                        for (long o : offs) {
                            retList.add(o);
                        }
                        rets += offs.length;
                        spec = ProbeSpec.go(nextId++, file, pid, t.entryFileOffset(), retList, (int) go.goidOffset(),
                                go.registerAbi() ? ProbeSpec.GSource.R14 : ProbeSpec.GSource.TLS).withStacks(c.stacks());
                    } else {
                        spec = ProbeSpec.nativeFunction(nextId++, file, pid, t.entryFileOffset()).withStacks(c.stacks());
                    }
                    out.add(new ProbedFunction(label, t.name(), t.entryAddress(), spec, fileBuild.buildId(), fileBuild.file()));
                    planned++;
                    plannedTotal++;
                }
                if (!unsafe.isEmpty()) {
                    problems.add("probe " + c.target() + ": " + (unsafe.size() == 1 ? unsafe.get(0) + " cannot"
                            : unsafe.size() + " of " + fresh.size() + " functions matching '" + pattern + "' cannot")
                            + " be probed safely: " + reason + (unsafe.size() > 1 ? ": " + names(unsafe) : ""));
                }
                if (planned > 0) {
                    notes.add(c.target() + ": '" + pattern + "': " + planned + (planned == 1 ? " function" : " functions")
                            + " from " + r.source() + (go != null
                            ? ", Go " + go.goVersion().orElse("(version unknown)") + ", goid at +" + go.goidOffset() + " ("
                            + go.goidSource() + "), g in " + (go.registerAbi() ? "R14" : "TLS") + ", entry + " + rets + " RET uprobes"
                            : ", entry uprobe + uretprobe")
                            + (pid == -1 ? ", every process" : ", pid " + pid) + (c.stacks() ? ", caller stacks" : ""));
                }
            }
        }
        return new Plan(out, notes, problems, missing);
    }

    /** Which file a probe goes on and its build, read before its functions are resolved (a deploy may race). */
    private record FileBuild(FileKey file, String buildId) {}

    private static FileBuild fileBuild(Path file) {
        FileKey key = FileKey.of(file).orElse(FileKey.NONE);
        String id;
        try {
            id = dev.loupe.unwinder.elf.ElfFile.buildIdOf(file).orElse("");
        } catch (IOException | RuntimeException | dev.loupe.unwinder.elf.ElfException e) {
            id = ""; // resolving its functions reports what is wrong with the file
        }
        return new FileBuild(key, id);
    }

    private static String names(List<String> names) {
        int shown = Math.min(5, names.size());
        return String.join(", ", names.subList(0, shown)) + (names.size() > shown ? " and " + (names.size() - shown) + " more" : "");
    }
}
