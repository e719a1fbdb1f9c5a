package dev.loupe.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ShipConfigTest {
    @Test
    void defaultsShipNowhereAndSpoolUnderVarLib() {
        LoupeConfig d = LoupeConfig.defaults();
        assertTrue(d.localFiles());
        assertEquals(Optional.empty(), d.remoteStore());
        assertEquals(Optional.empty(), d.kafka());
        assertEquals(Path.of("/var/lib/loupe/spool"), d.spoolDir());
        assertEquals(1L << 30, d.spoolMaxBytes());
        assertEquals(Map.of(), d.externalLabels());
    }

    @Test
    void parcaAgentFlagNames(@TempDir Path dir) throws Exception {
        LoupeConfig c = CommandLine.parse(new String[] {"--remote-store-address", "parca.example.com:7070",
                "--remote-store-insecure", "--remote-store-bearer-token-file", "/etc/loupe/token", "--output", "off",
                "--external-label", "region=eu-west-1", "--spool-dir", dir.toString(), "--spool-max-bytes", "64MiB"}).config();
        RemoteStore r = c.remoteStore().orElseThrow();
        assertEquals("parca.example.com:7070", r.address());
        assertTrue(r.insecure());
        assertFalse(r.insecureSkipVerify());
        assertEquals(Optional.of(Path.of("/etc/loupe/token")), r.bearerTokenFile());
        assertEquals(16L << 20, r.batchMaxBytes(), "the declared default, 16MiB");
        assertFalse(c.localFiles());
        assertEquals(Map.of("region", "eu-west-1"), c.externalLabels());
        assertEquals(dir, c.spoolDir());
        assertEquals(64L << 20, c.spoolMaxBytes());
        assertFalse(CommandLine.parse(new String[] {"--remote-store-address", "h:1", "--remote-store-insecure=false"})
                .config().remoteStore().orElseThrow().insecure());
    }

    @Test
    void fileKeysForTlsHeadersTimeoutBatchAndKafka() throws Exception {
        LoupeConfig c = ConfigLoader.parse("""
                remote-store:
                  address: "[::1]:7070"
                  ca-file: /etc/ca.pem
                  cert-file: /etc/c.pem
                  key-file: /etc/k.pem
                  headers: {projectID: p-123}
                  timeout: 2s
                  batch-max-bytes: 4MiB
                kafka:
                  bootstrap-servers: k1:9092,k2:9092
                  producer: {security.protocol: SSL}
                  transactional: true
                external-labels: {team: core}
                """, "ship.yaml");
        RemoteStore r = c.remoteStore().orElseThrow();
        assertEquals(Optional.of(Path.of("/etc/ca.pem")), r.caFile());
        assertEquals(Optional.of(Path.of("/etc/k.pem")), r.keyFile());
        assertEquals(Map.of("projectID", "p-123"), r.headers());
        assertEquals(Duration.ofSeconds(2), r.timeout());
        assertEquals(4L << 20, r.batchMaxBytes());
        KafkaSettings k = c.kafka().orElseThrow();
        assertEquals("k1:9092,k2:9092", k.bootstrapServers());
        assertEquals(KafkaSettings.DEFAULT_TOPIC, k.topic());
        assertEquals(Map.of("security.protocol", "SSL"), k.producer());
        assertTrue(k.transactional());
        assertEquals(Map.of("team", "core"), c.externalLabels());
    }

    @Test
    void errorsNameFileLineAndProblem(@TempDir Path dir) throws Exception {
        assertEquals("s.yaml:2: remote-store.address: port must be 1..65535, got \"99999\"",
                bad("remote-store:\n  address: parca:99999\n").getMessage());
        assertEquals("s.yaml:2: remote-store: cert-file and key-file go together (mutual TLS needs both)",
                bad("remote-store:\n  address: parca:7070\n  cert-file: /c.pem\n").getMessage());
        assertEquals("s.yaml:2: remote-store: address is missing (host:port of Parca)",
                bad("remote-store:\n  insecure: true\n").getMessage());
        assertTrue(bad("remote-store:\n  adress: p:1\n").getMessage().contains("did you mean remote-store.address?"));
        assertEquals("s.yaml:3: remote-store.headers: header \"Authorization\" is set by Loupe (use bearer-token-file for authorization)",
                bad("remote-store:\n  address: p:1\n  headers: {Authorization: x}\n").getMessage());
        assertEquals("s.yaml:1: external-labels: label \"pid\" is set by Loupe on every series",
                bad("external-labels: {pid: 3}\n").getMessage());
        assertTrue(bad("external-labels: {9lives: x}\n").getMessage().contains("not a valid label name"));
        assertTrue(bad("kafka:\n  topic: 'a topic'\n").getMessage().contains("not a valid Kafka topic name"));
        assertTrue(bad("kafka:\n  bootstrap-servers: k:1\n  transactional: maybe\n").getMessage().startsWith("s.yaml:3: kafka.transactional:"));
        assertTrue(bad("spool:\n  max-bytes: 10KiB\n").getMessage().contains("spool.max-bytes: must be between 1MiB and 1024GiB"));
        assertEquals("--remote-store-address: missing: the other --remote-store-* flags need it",
                assertThrows(ConfigException.class, () -> CommandLine.parse(new String[] {"--remote-store-insecure"})).getMessage());
        assertTrue(assertThrows(ConfigException.class, () -> CommandLine.parse(new String[] {"--external-label", "novalue"}))
                .getMessage().contains("must be NAME=VALUE"));
        Path f = dir.resolve("c.yaml");
        Files.writeString(f, "frequency: 19\nkafka:\n  bootstrap-servers: nohost\n");
        assertEquals(f + ":3: kafka.bootstrap-servers: must be host:port (e.g. parca.example.com:7070), got \"nohost\"",
                assertThrows(ConfigException.class, () -> ConfigLoader.load(f)).getMessage());
    }

    @Test
    void flagsOverrideFile(@TempDir Path dir) throws Exception {
        Path f = dir.resolve("c.yaml");
        Files.writeString(f, "remote-store:\n  address: a:1\n  insecure: true\nexternal-labels: {team: core, env: prod}\n");
        LoupeConfig c = CommandLine.parse(new String[] {"--config", f.toString(), "--remote-store-address", "b:2",
                "--external-label", "env=dev"}).config();
        assertEquals("b:2", c.remoteStore().orElseThrow().address());
        assertTrue(c.remoteStore().orElseThrow().insecure());
        assertEquals(Map.of("team", "core", "env", "dev"), c.externalLabels());
    }

    private static ConfigException bad(String yaml) {
        return assertThrows(ConfigException.class, () -> ConfigLoader.parse(yaml, "s.yaml"));
    }
}
