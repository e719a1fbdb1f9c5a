package dev.loupe.agent.relay;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class RelayCommandTest {
    @TempDir
    Path dir;

    private static String error(String... args) {
        return assertThrows(IllegalArgumentException.class, () -> RelayCommand.parse(args)).getMessage();
    }

    @Test
    void defaultsAndFlags() throws Exception {
        Path token = Files.writeString(dir.resolve("token"), "s3cret\n");
        var p = RelayCommand.parse(new String[] {"--kafka-bootstrap-servers", "k1:9092,k2:9092",
                "--remote-store-address=parca:7070", "--remote-store-insecure",
                "--remote-store-bearer-token-file", token.toString(),
                "--kafka-property", "security.protocol=SASL_SSL", "--kafka-property", "sasl.mechanism=PLAIN"});
        assertFalse(p.help());
        assertEquals("k1:9092,k2:9092", p.relay().bootstrapServers());
        assertEquals("loupe.profiles", p.relay().topic());
        assertEquals("loupe-relay", p.relay().groupId());
        assertEquals(Map.of("security.protocol", "SASL_SSL", "sasl.mechanism", "PLAIN"), p.relay().consumerProperties());
        assertEquals(Path.of("/var/lib/loupe/relay-quarantine"), p.relay().quarantineDir(), "the declared default");
        assertEquals("parca", p.parca().host());
        assertEquals(7070, p.parca().port());
        assertTrue(p.parca().insecure());
        assertEquals(token, p.parca().bearerTokenFile().orElseThrow());
        assertFalse(p.parca().toString().contains("s3cret"));

        var q = RelayCommand.parse(new String[] {"--kafka-bootstrap-servers", "k:1", "--remote-store-address", "p:2",
                "--kafka-topic", "other.topic", "--kafka-group-id", "g2", "--quarantine-dir", dir.toString()});
        assertEquals("other.topic", q.relay().topic());
        assertEquals("g2", q.relay().groupId());
        assertEquals(dir, q.relay().quarantineDir());
        assertFalse(q.parca().insecure());
        assertTrue(RelayCommand.parse(new String[] {"--help"}).help());
    }

    @Test
    void badArgumentsSayWhat() {
        assertEquals("--kafka-bootstrap-servers: required (or kafka.bootstrap-servers in the --config file)",
                error("--remote-store-address", "p:1"));
        assertEquals("--remote-store-address: required (or remote-store.address in the --config file)",
                error("--kafka-bootstrap-servers", "k:1"));
        assertEquals("--nope: unknown option; see --help", error("--nope"));
        assertEquals("--kafka-topic: needs a value", error("--kafka-topic"));
        assertTrue(error("--kafka-bootstrap-servers", "nohost", "--remote-store-address", "p:1").startsWith("--kafka-bootstrap-servers: must be host:port"));
        assertTrue(error("--kafka-bootstrap-servers", "k:1", "--remote-store-address", "p:1", "--kafka-topic", "a b")
                .startsWith("--kafka-topic: \"a b\" is not a valid Kafka topic name"));
        assertTrue(error("--kafka-bootstrap-servers", "k:1", "--remote-store-address", "p:1", "--kafka-property", "enable.auto.commit=true")
                .contains("enable.auto.commit cannot be set"));
        assertTrue(error("--kafka-bootstrap-servers", "k:1", "--remote-store-address", "p:1", "--kafka-property", "novalue")
                .startsWith("--kafka-property: must be KEY=VALUE"));
        assertTrue(error("--kafka-bootstrap-servers", "k:1", "--remote-store-address", "p:1", "--remote-store-insecure=maybe")
                .startsWith("--remote-store-insecure: "));
    }

    @Test
    void runReturnsTwoOnBadArgumentsAndAMissingTokenFile() {
        PrintStream err = System.err;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setErr(new PrintStream(captured, true));
        try {
            assertEquals(2, RelayCommand.run(new String[] {"--bogus"}));
            assertEquals(2, RelayCommand.run(new String[] {"--kafka-bootstrap-servers", "127.0.0.1:1",
                    "--remote-store-address", "127.0.0.1:2", "--remote-store-insecure",
                    "--remote-store-bearer-token-file", dir.resolve("missing").toString()}));
        } finally {
            System.setErr(err);
        }
        String out = captured.toString();
        assertTrue(out.contains("loupe relay: --bogus: unknown option; see --help"), out);
        assertTrue(out.contains("missing"), out);
    }
}
