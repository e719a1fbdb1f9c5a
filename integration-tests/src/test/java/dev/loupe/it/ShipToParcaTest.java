package dev.loupe.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.loupe.agent.ship.ParcaStandIn;
import dev.loupe.pprof.ParcaRules;
import dev.loupe.pprof.PprofFiles;
import dev.loupe.pprof.parca.RawProfileSeries;
import dev.loupe.pprof.proto.Profile;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The packaged agent ships to a Parca stand-in (grpc-java, Parca's rules on every request) across an outage,
 * a SIGTERM and a SIGKILL: every interval the agent wrote to its local files also reaches the store, once.
 */
class ShipToParcaTest {
    private static final String TOKEN = "s3cret-token-for-ship-test";

    @TempDir
    Path dir;

    private String[] args(Process target, int port, Path out, Path spool, Path tokenFile) {
        return new String[] {"--pid", Long.toString(target.pid()), "--frequency", "99", "--interval", "1s",
                "--output", out.toString(), "--http", "off", "--remote-store-address", "127.0.0.1:" + port,
                "--remote-store-insecure", "--remote-store-bearer-token-file", tokenFile.toString(),
                "--spool-dir", spool.toString(), "--external-label", "team=it"};
    }

    @Test
    void outageSigtermAndSigkillLoseNothing() throws Exception {
        Path bin = Targets.build("callchain.c", dir, "shipped", "-fno-omit-frame-pointer");
        Process target = Targets.start(bin);
        Path out = dir.resolve("profiles");
        Path spool = dir.resolve("spool");
        Path tokenFile = Files.writeString(dir.resolve("token"), TOKEN + "\n");
        ParcaStandIn standIn = new ParcaStandIn().start();
        int port = standIn.port();
        String firstLog;
        try {
            // 1. Running, then the store goes away for 4 s and comes back, then SIGTERM.
            try (AgentProcess agent = AgentProcess.start(dir, args(target, port, out, spool, tokenFile))) {
                agent.awaitSampling(Duration.ofSeconds(60));
                await("3 requests", () -> standIn.accepted().size() >= 3, agent);
                standIn.stop();
                Thread.sleep(4_000);
                standIn.start();
                int before = standIn.accepted().size();
                await("the outage's backlog", () -> standIn.accepted().size() >= before + 4, agent);
                agent.terminate();
                int exit = agent.awaitExit(Duration.ofSeconds(60));
                assertTrue(exit == 0 || exit == 143, "SIGTERM exit " + exit + "\n" + agent.log());
                firstLog = agent.log();
            }
            assertEquals(fileIntervals(out), storeIntervals(standIn, target.pid(), bin),
                    "every interval written locally reached the store once, across the outage and the SIGTERM");
            assertFalse(firstLog.contains(TOKEN), "the bearer token never reaches the log");
            for (var r : standIn.accepted()) {
                assertEquals("Bearer " + TOKEN, r.headers().get(ParcaStandIn.AUTHORIZATION));
            }
            assertTrue(standIn.rejections().isEmpty(), standIn.rejections().toString());

            // 2. Store away, agent killed with SIGKILL while it holds unsent intervals; the next start sends them.
            standIn.stop();
            Path out2 = dir.resolve("profiles2");
            try (AgentProcess agent = AgentProcess.start(dir, args(target, port, out2, spool, tokenFile))) {
                agent.awaitSampling(Duration.ofSeconds(60));
                await("3 local intervals", () -> fileIntervals(out2).size() >= 3, agent);
            } // close() = SIGKILL
            TreeSet<Long> killed = fileIntervals(out2);
            assertTrue(Stream.of(Files.list(spool.resolve("parca")).toArray()).anyMatch(p -> p.toString().endsWith(".batch")),
                    "unsent intervals are in the spool after SIGKILL");
            standIn.start();
            int before = standIn.accepted().size();
            Path out3 = dir.resolve("profiles3");
            try (AgentProcess agent = AgentProcess.start(dir, args(target, port, out3, spool, tokenFile))) {
                agent.awaitSampling(Duration.ofSeconds(60));
                await("the killed run's intervals", () -> storeIntervals(standIn, target.pid(), bin).containsAll(killed), agent);
                agent.terminate();
                int exit = agent.awaitExit(Duration.ofSeconds(60));
                assertTrue(exit == 0 || exit == 143, "SIGTERM exit " + exit + "\n" + agent.log());
            }
            TreeSet<Long> all = new TreeSet<>(fileIntervals(out));
            all.addAll(killed);
            all.addAll(fileIntervals(out3));
            assertEquals(all, storeIntervals(standIn, target.pid(), bin), "every interval of the three runs, once");
            assertTrue(standIn.accepted().size() > before);
            assertTrue(standIn.rejections().isEmpty(), standIn.rejections().toString());
        } finally {
            standIn.close();
            Targets.kill(target);
        }
    }

    /** Start times of the local files' non-empty intervals. */
    private static TreeSet<Long> fileIntervals(Path out) {
        TreeSet<Long> t = new TreeSet<>();
        if (!Files.isDirectory(out)) {
            return t;
        }
        try (Stream<Path> files = Files.list(out)) {
            for (Path f : files.filter(p -> p.toString().endsWith(".pb.gz")).toList()) {
                Profile p = PprofFiles.parse(Files.readAllBytes(f));
                if (p.getSampleCount() > 0) {
                    t.add(p.getTimeNanos());
                }
            }
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        return t;
    }

    /** Start times of the target's series the store accepted; fails on a duplicate or a wrong label. */
    private static TreeSet<Long> storeIntervals(ParcaStandIn standIn, long pid, Path bin) {
        TreeSet<Long> t = new TreeSet<>();
        for (var r : standIn.accepted()) {
            for (RawProfileSeries s : r.request().getSeriesList()) {
                Map<String, String> labels = new TreeMap<>();
                s.getLabels().getLabelsList().forEach(l -> labels.put(l.getName(), l.getValue()));
                if (!labels.get("pid").equals(Long.toString(pid))) {
                    continue;
                }
                assertEquals("parca_agent_cpu", labels.get("__name__"));
                assertEquals("it", labels.get("team"));
                assertEquals("shipped", labels.get("comm"));
                assertEquals(bin.toString(), labels.get("executable"));
                assertTrue(labels.containsKey("node"), labels.toString());
                Profile p = PprofFiles.parse(s.getSamples(0).getRawProfile().toByteArray());
                assertEquals(List.of(), ParcaRules.violations(p));
                if (!t.add(p.getTimeNanos())) {
                    throw new AssertionError("interval " + p.getTimeNanos() + " reached the store twice");
                }
            }
        }
        return t;
    }

    private static void await(String what, BooleanSupplier condition, AgentProcess agent) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out waiting for " + what + "\n" + agent.log());
            }
            Thread.sleep(50);
        }
    }
}
