package dev.loupe.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.loupe.agent.ship.ParcaStandIn;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
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
            assertEquals(ShippedIntervals.inFiles(out), ShippedIntervals.atStore(standIn, target.pid(), bin, "it"),
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
                await("3 local intervals", () -> ShippedIntervals.inFiles(out2).size() >= 3, agent);
            } // close() = SIGKILL
            TreeSet<Long> killed = ShippedIntervals.inFiles(out2);
            assertTrue(Stream.of(Files.list(spool.resolve("parca")).toArray()).anyMatch(p -> p.toString().endsWith(".batch")),
                    "unsent intervals are in the spool after SIGKILL");
            standIn.start();
            int before = standIn.accepted().size();
            Path out3 = dir.resolve("profiles3");
            try (AgentProcess agent = AgentProcess.start(dir, args(target, port, out3, spool, tokenFile))) {
                agent.awaitSampling(Duration.ofSeconds(60));
                await("the killed run's intervals", () -> ShippedIntervals.atStore(standIn, target.pid(), bin, "it").containsAll(killed), agent);
                agent.terminate();
                int exit = agent.awaitExit(Duration.ofSeconds(60));
                assertTrue(exit == 0 || exit == 143, "SIGTERM exit " + exit + "\n" + agent.log());
            }
            TreeSet<Long> all = new TreeSet<>(ShippedIntervals.inFiles(out));
            all.addAll(killed);
            all.addAll(ShippedIntervals.inFiles(out3));
            assertEquals(all, ShippedIntervals.atStore(standIn, target.pid(), bin, "it"), "every interval of the three runs, once");
            assertTrue(standIn.accepted().size() > before);
            assertTrue(standIn.rejections().isEmpty(), standIn.rejections().toString());
        } finally {
            standIn.close();
            Targets.kill(target);
        }
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
