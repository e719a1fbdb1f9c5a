package dev.loupe.it;

import dev.loupe.pprof.PprofFiles;
import dev.loupe.pprof.proto.Profile;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The .deb as a fleet host gets it: built by systemd/build-package.sh, checked with dpkg-deb, then installed
 * into a minimal Debian 12 (debootstrap minbase plus systemd) booted with a real systemd (systemd-nspawn) and driven
 * with systemctl: what the package uses comes with it or with its Depends.
 */
class SystemdServiceTest {
    /** CAP_DAC_READ_SEARCH(2), CAP_SYS_PTRACE(19), CAP_SYSLOG(34), CAP_PERFMON(38), CAP_BPF(39), CAP_CHECKPOINT_RESTORE(40). */
    private static final long CAPABILITIES = (1L << 2) | (1L << 19) | (1L << 34) | (1L << 38) | (1L << 39) | (1L << 40);
    private static final Path REPO = Path.of(System.getProperty("loupe.repo", "..")).toAbsolutePath().normalize();
    /** The project's version (the agent jar's Implementation-Version), from the build. */
    private static final String VERSION = System.getProperty("loupe.version", "");
    private static final String SYSTEM_LIBBPF = "/usr/lib/x86_64-linux-gnu/libbpf.so";
    private static final String BUNDLED_LIBBPF = "/usr/lib/loupe/native/libbpf.so.1";
    /** What an admin's shell has: no JAVA_HOME, no JDK on PATH. */
    private static final String[] CLEAN_ENV = {"env", "-i", "PATH=/usr/sbin:/usr/bin:/sbin:/bin"};
    private static Path deb;

    @BeforeAll
    static void buildPackage() throws Exception {
        Path javaHome = Path.of(System.getProperty("java.home"));
        Commands.Result r = Commands.run(List.of("env", "JAVA_HOME=" + javaHome,
                REPO.resolve("systemd/build-package.sh").toString(), REPO.toString()), 900);
        assertEquals(0, r.exit(), r.output());
        String[] lines = r.output().strip().split("\n");
        deb = Path.of(lines[lines.length - 1]);
        assertTrue(Files.isRegularFile(deb), r.output());
    }

    @Test
    void packageHoldsARuntimeAndDependsOnNoToolchain(@TempDir Path dir) throws Exception {
        String contents = Commands.run(List.of("dpkg-deb", "-c", deb.toString()), 60).check().output();
        for (String f : List.of("./usr/bin/loupe", "./usr/lib/loupe/runtime/bin/java", "./usr/lib/loupe/loupe-agent.jar",
                "./usr/lib/loupe/run.jvmopts", "./usr/lib/loupe/relay.jvmopts", "./usr/lib/loupe/native/libbpf.so.1", "./usr/lib/loupe/latency-diff.jvmopts",
                "./lib/systemd/system/loupe.service",
                "./etc/loupe/loupe.yaml", "./usr/share/doc/loupe/README.md", "./usr/share/doc/loupe/configuration.md",
                "./usr/share/loupe/prometheus/loupe-rules.yml")) {
            assertTrue(contents.contains(" " + f + "\n"), f + " in\n" + contents);
        }
        assertFalse(contents.contains("/usr/lib/loupe/runtime/bin/javac"), "a runtime, not a JDK");
        assertEquals("/etc/loupe/loupe.yaml", conffiles(dir));
        String depends = Commands.run(List.of("dpkg-deb", "-f", deb.toString(), "Depends"), 60).check().output().strip();
        Set<String> names = Arrays.stream(depends.split(",")).map(d -> d.strip().split("[ (]")[0])
                .collect(Collectors.toCollection(TreeSet::new));
        assertEquals(new TreeSet<>(Set.of("adduser", "libc6", "libelf1", "zlib1g")), names, depends);

        Path x = dir.resolve("x");
        Commands.run(List.of("dpkg-deb", "-x", deb.toString(), x.toString()), 120).check();
        // The bundled runtime on its own: no JAVA_HOME, no PATH to a JDK.
        Commands.Result v = Commands.run(List.of("env", "-i", "PATH=/usr/bin:/bin",
                x.resolve("usr/lib/loupe/runtime/bin/java").toString(), "-jar",
                x.resolve("usr/lib/loupe/loupe-agent.jar").toString(), "--version"), 60);
        assertEquals(0, v.exit(), v.output());
        assertTrue(v.output().startsWith("loupe 0.1.0"), v.output());
        assertTrue(v.output().contains("(Java 25"), v.output());
        String bpfJar = Commands.run(List.of("sh", "-c", "ls " + x.resolve("usr/lib/loupe/lib") + "/loupe-bpf-*.jar"), 10)
                .check().output().strip();
        String bpf = Commands.run(List.of("unzip", "-l", bpfJar), 30).check().output();
        assertTrue(bpf.contains("dev/loupe/bpf/profiler.bpf.o") && bpf.contains("dev/loupe/bpf/latency.bpf.o"), bpf);
    }

    private static String conffiles(Path dir) throws Exception {
        Path c = dir.resolve("control");
        Commands.run(List.of("dpkg-deb", "-e", deb.toString(), c.toString()), 60).check();
        return Files.readString(c.resolve("conffiles")).strip();
    }

    @Test
    void serviceRunsLeastPrivilegedWithReadinessReloadWatchdogAndCleanStop(@TempDir Path work) throws Exception {
        // libbpf1: installed later, for the upgrade on a host that has a system libbpf.
        try (NspawnMachine m = NspawnMachine.boot(REPO, work, "loupe-it-" + ProcessHandle.current().pid(), deb, "libbpf1")) {
            // The premise: a minimal host. No procps (so no /bin/kill), and libelf1, which the package depends on, not yet.
            assertFalse(installed(m, "procps") || Files.exists(m.root().resolve("usr/bin/kill")), "a minimal root has no kill binary");
            assertFalse(installed(m, "libelf1"), "the package's Depends come with its install, not with the root");
            long t0 = System.nanoTime();
            Commands.Result install = m.check(600, "apt-get", "install", "-y", NspawnMachine.PACKAGE);
            System.out.printf("package install (with the AOT training run) took %.1f s%n", (System.nanoTime() - t0) / 1e9);
            Path aot = m.root().resolve("usr/lib/loupe/loupe-agent.aot");
            assertTrue(Files.isRegularFile(aot) && !install.output().contains("no AOT cache made"), install.output());
            assertTrue(installed(m, "libelf1"), "apt installed the package's Depends:\n" + install.output());
            assertFalse(installed(m, "procps"), "nothing the package pulls in brings a kill binary:\n" + install.output());

            // /usr/bin/loupe, the packaged launcher, as an admin runs it.
            Commands.Result version = m.run(60, cmd("loupe", "--version"));
            assertFalse(VERSION.isEmpty(), "-Dloupe.version (integration-tests/pom.xml)");
            assertEquals(0, version.exit(), version.output());
            assertTrue(version.output().matches("loupe " + Pattern.quote(VERSION) + " \\(Java 25[^\\s,]*, /usr/lib/loupe/runtime\\)\n"),
                    "one line, 'loupe VERSION (Java 25..., /usr/lib/loupe/runtime)':\n" + version.output());
            Commands.Result relayHelp = m.run(60, cmd("loupe", "relay", "--help"));
            assertEquals(0, relayHelp.exit(), relayHelp.output());
            assertTrue(relayHelp.output().startsWith("Usage: loupe relay --kafka-bootstrap-servers"), relayHelp.output());
            assertTrue(relayHelp.output().contains("--kafka-group-id"), "relay's own option:\n" + relayHelp.output());
            assertFalse(relayHelp.output().contains("--frequency"), "not run's options:\n" + relayHelp.output());

            // Installed, enabled and started; active only after READY (systemd logs "Started" on READY=1).
            assertEquals("enabled", m.run(30, "systemctl", "is-enabled", "loupe").output().strip());
            m.await("loupe.service active", Duration.ofSeconds(90), () -> m.property("loupe.service", "ActiveState").equals("active"));
            assertEquals("notify", m.property("loupe.service", "Type"));
            String journal = m.journal("loupe.service");
            int readyAt = journal.indexOf("ready: the sampler is attached and the first sample was read");
            int startedAt = journal.indexOf("Started loupe.service");
            assertTrue(readyAt >= 0 && startedAt > readyAt, "READY before systemd called it started:\n" + journal);
            // Under systemd ($JOURNAL_STREAM set) the agent's lines carry no time of their own: the journal stamps them.
            assertAgentLinesUnstamped(journal, "ready: the sampler is attached and the first sample was read");
            m.await("a status line with samples and processes", Duration.ofSeconds(20), () -> m.property("loupe.service", "StatusText")
                    .matches("[1-9][0-9.]* samples/s from [1-9][0-9]* processes; sinks: file ok"));

            // The main process: the loupe user, exactly the unit's capabilities.
            String pid = m.property("loupe.service", "MainPID");
            String uid = m.check(30, "id", "-u", "loupe").output().strip();
            String status = m.check(30, "cat", "/proc/" + pid + "/status").output();
            assertEquals(uid, field(status, "Uid").split("\\s+")[0], status);
            for (String cap : List.of("CapEff", "CapPrm", "CapAmb", "CapBnd")) {
                assertEquals(CAPABILITIES, Long.parseLong(field(status, cap), 16), cap + " in\n" + status);
            }
            assertTrue(m.check(30, "cat", "/proc/" + pid + "/cmdline").output().contains("/usr/lib/loupe/runtime/bin/java"));
            assertFalse(installed(m, "libbpf1"), "a host without libbpf1");
            assertTrue(m.check(30, "cat", "/proc/" + pid + "/maps").output().contains(BUNDLED_LIBBPF + "\n"), "the bundled libbpf is loaded");

            // Profiles appear where the service keeps its state.
            m.await("a CPU profile", Duration.ofSeconds(40), () -> profiles(m) > 0);
            m.await("a CPU profile with samples", Duration.ofSeconds(40), () -> withSamples(cpuFiles(m)).isPresent());
            Path beforeReload = withSamples(cpuFiles(m).reversed()).orElseThrow();

            // Who may read profiles: /run/loupe is 0750 loupe:loupe and the socket in it 0660, so root and group loupe
            // reach it and nobody else; TCP serves /metrics and /healthz to anyone and profiles to no one
            // (http.profiles: off). The clients run as nobody, with and without the group, through perl-base (all a
            // minimal root has).
            installHttpClient(m);
            String loupeGid = m.check(30, "getent", "group", "loupe").output().strip().split(":")[2];
            assertEquals("750 loupe loupe directory", m.check(30, "stat", "-c", "%a %U %G %F", "/run/loupe").output().strip());
            assertEquals("660 loupe loupe socket", m.check(30, "stat", "-c", "%a %U %G %F", SOCKET).output().strip());
            Commands.Result tcpProfile = get(m, NOBODY, "127.0.0.1:7071", "/debug/pprof/profile?seconds=1", "nobody-tcp", null);
            assertStatus(403, tcpProfile, "nobody gets no profile over TCP");
            assertTrue(body(m, "nobody-tcp").contains("http.profiles"), "a one-line reason: " + body(m, "nobody-tcp"));
            Commands.Result socketAsNobody = get(m, NOBODY, SOCKET, "/debug/pprof/profile?seconds=1", "nobody-socket", null);
            assertEquals(3, socketAsNobody.exit(), socketAsNobody.output());
            assertEquals("connect: Permission denied", socketAsNobody.output().strip());
            String[] member = {"setpriv", "--reuid=65534", "--regid=65534", "--groups=" + loupeGid};
            Commands.Result socketAsMember = get(m, member, SOCKET, "/debug/pprof/profile?seconds=2", "member.pb.gz", null);
            assertStatus(200, socketAsMember, "a member of group loupe gets a profile");
            assertReadableProfile(m, "member.pb.gz");
            Commands.Result scrape = get(m, NOBODY, "127.0.0.1:7071", "/metrics", "metrics", null);
            assertStatus(200, scrape, "Prometheus scrapes /metrics over TCP");
            String metrics = body(m, "metrics");
            assertTrue(metrics.contains("loupe_http_requests_refused_total{listener=\"tcp\",reason=\"profiles_off\"} 1.0\n"), metrics);
            assertTrue(metrics.contains("loupe_http_requests_refused_total{listener=\"tcp\",reason=\"no_token\"} 0.0\n"), metrics);
            assertStatus(200, get(m, NOBODY, "127.0.0.1:7071", "/healthz", "healthz", null), "/healthz for anyone");

            // Reload (SIGHUP from ExecReload, on a host without /bin/kill): a new label is applied live by the same
            // process; the interval waits for a restart.
            Path conf = m.root().resolve("etc/loupe/loupe.yaml");
            String original = Files.readString(conf);
            Files.writeString(conf, original + "external-labels: {team: profiling}\ninterval: 20s\n");
            m.check(60, "systemctl", "reload", "loupe");
            m.await("the reload's log line", Duration.ofSeconds(30), () -> m.journal("loupe.service").contains("reload: applied:"));
            // The line comes after the old sinks wrote what they held: a file not there now was written after the reload.
            Set<Path> atReload = Set.copyOf(cpuFiles(m));
            assertTrue(m.journal("loupe.service").contains(
                    "reload: applied: external-labels; needs a restart (the running value stays): interval"), m.journal("loupe.service"));
            assertEquals(pid, m.property("loupe.service", "MainPID"), "reload keeps the process");
            assertAgentLinesUnstamped(m.journal("loupe.service"), "reload: applied: external-labels");
            assertEquals("active", m.property("loupe.service", "ActiveState"));
            // Local files carry the external labels on every sample, as they carry node, from the first interval
            // after the reload on; remote sinks (none here) keep them as series labels.
            m.await("a profile with samples written after the reload", Duration.ofSeconds(40),
                    () -> withSamples(cpuFiles(m).stream().filter(f -> !atReload.contains(f)).toList()).isPresent());
            Path afterReload = withSamples(cpuFiles(m).stream().filter(f -> !atReload.contains(f)).toList()).orElseThrow();
            assertEquals(pid, m.property("loupe.service", "MainPID"), "both files from the same process");
            Profile unlabelled = PprofFiles.parse(Files.readAllBytes(beforeReload));
            Profile labelled = PprofFiles.parse(Files.readAllBytes(afterReload));
            for (int i = 0; i < unlabelled.getSampleCount(); i++) {
                Map<String, String> l = strLabels(unlabelled, i);
                assertTrue(l.containsKey("node") && !l.containsKey("team"), beforeReload.getFileName() + " sample " + i + ": " + l);
            }
            for (int i = 0; i < labelled.getSampleCount(); i++) {
                Map<String, String> l = strLabels(labelled, i);
                assertTrue(l.containsKey("node") && "profiling".equals(l.get("team")), afterReload.getFileName() + " sample " + i + ": " + l);
            }

            // A broken file on reload: refused with its line, the old configuration keeps running.
            Files.writeString(conf, original + "frequency: [\n");
            m.check(60, "systemctl", "reload", "loupe");
            m.await("the refusal", Duration.ofSeconds(30), () -> m.journal("loupe.service").contains("reload refused"));
            assertTrue(m.journal("loupe.service").contains("reload refused, the running configuration stays: /etc/loupe/loupe.yaml:"),
                    m.journal("loupe.service"));
            assertEquals(pid, m.property("loupe.service", "MainPID"));
            assertEquals("active", m.property("loupe.service", "ActiveState"));
            // From here one interval lasts longer than the test: the only file a process writes is its flush at stop.
            // And profiles are served on TCP too, to a client with the bearer token (restart-only settings: the
            // restart below applies them).
            String token = java.util.HexFormat.of().formatHex(randomBytes(16));
            Files.writeString(m.root().resolve("etc/loupe/http-token"), token + "\n");
            m.check(30, "chown", "root:loupe", "/etc/loupe/http-token");
            m.check(30, "chmod", "0640", "/etc/loupe/http-token");
            assertTrue(original.contains("\nhttp:\n"), original);
            Files.writeString(conf, original.replace("\nhttp:\n", "\nhttp:\n  profiles: on\n  bearer-token-file: /etc/loupe/http-token\n")
                    + "interval: 1h\n");

            // A stopped (SIGSTOP) agent pets no watchdog: systemd kills and restarts it.
            Path dropIn = m.root().resolve("etc/systemd/system/loupe.service.d/watchdog.conf");
            Files.createDirectories(dropIn.getParent());
            Files.writeString(dropIn, "[Service]\nWatchdogSec=6s\nRestartSec=1s\n");
            m.check(30, "systemctl", "daemon-reload");
            m.check(120, "systemctl", "restart", "loupe");
            m.await("loupe.service active after the restart", Duration.ofSeconds(90),
                    () -> m.property("loupe.service", "ActiveState").equals("active"));
            Commands.Result noToken = get(m, NOBODY, "127.0.0.1:7071", "/debug/pprof/profile?seconds=1", "no-token", null);
            assertStatus(401, noToken, "no token: 401");
            Commands.Result wrongToken = get(m, NOBODY, "127.0.0.1:7071", "/debug/pprof/profile?seconds=1", "wrong-token",
                    token.substring(1) + "0");
            assertStatus(401, wrongToken, "a wrong token: 401");
            Commands.Result rightToken = get(m, NOBODY, "127.0.0.1:7071", "/debug/pprof/profile?seconds=2", "token.pb.gz", token);
            assertStatus(200, rightToken, "the right token: a profile, whoever asks");
            assertReadableProfile(m, "token.pb.gz");
            get(m, NOBODY, "127.0.0.1:7071", "/metrics", "metrics-token", null);
            String counted = body(m, "metrics-token");
            assertTrue(counted.contains("loupe_http_requests_refused_total{listener=\"tcp\",reason=\"no_token\"} 1.0\n")
                    && counted.contains("loupe_http_requests_refused_total{listener=\"tcp\",reason=\"wrong_token\"} 1.0\n")
                    && counted.contains("loupe_http_requests_refused_total{listener=\"tcp\",reason=\"profiles_off\"} 0.0\n"), counted);
            String before = m.property("loupe.service", "MainPID");
            long restarts = Long.parseLong(m.property("loupe.service", "NRestarts"));
            m.check(10, "sh", "-c", "kill -STOP \"$1\"", "sh", before); // the shell's kill: the machine has no /bin/kill
            m.await("a restart by the watchdog", Duration.ofSeconds(60), () -> {
                String now = m.property("loupe.service", "MainPID");
                return !now.equals("0") && !now.equals(before) && m.property("loupe.service", "ActiveState").equals("active");
            });
            assertEquals(restarts + 1, Long.parseLong(m.property("loupe.service", "NRestarts")));
            assertTrue(m.run(30, "journalctl", "-b", "--no-pager", "-u", "loupe").output().contains("Watchdog timeout"),
                    m.journal("loupe.service"));

            // An upgrade (the same .deb again: postinst configure with the installed version) of an enabled, running
            // service: still enabled, and restarted by the new package (a new main process). The host has a system
            // libbpf1 from here on: the AOT training run (through /usr/bin/loupe) and the restarted service still load
            // the bundled one.
            String beforeUpgrade = m.property("loupe.service", "MainPID");
            m.check(300, "apt-get", "install", "-y", "libbpf1");
            Commands.Result upgrade = m.check(600, "dpkg", "-i", NspawnMachine.PACKAGE);
            assertTrue(Files.isRegularFile(aot) && !upgrade.output().contains("no AOT cache made"),
                    "the training run made the AOT cache with a system libbpf:\n" + upgrade.output());
            assertEquals("enabled", m.run(30, "systemctl", "is-enabled", "loupe").output().strip());
            assertEquals("active", m.property("loupe.service", "ActiveState"));
            String upgraded = m.property("loupe.service", "MainPID");
            assertFalse(upgraded.equals(beforeUpgrade), "a running service is restarted on upgrade");
            String maps = m.check(30, "cat", "/proc/" + upgraded + "/maps").output();
            assertTrue(maps.contains(BUNDLED_LIBBPF + "\n"), "the bundled libbpf is loaded");
            assertFalse(maps.contains(SYSTEM_LIBBPF), "not the system's libbpf1");

            // Stop: the partial interval is flushed and the exit is clean.
            int filesBefore = profiles(m);
            m.check(90, "systemctl", "stop", "loupe");
            assertEquals("inactive", m.property("loupe.service", "ActiveState"));
            assertEquals("success", m.property("loupe.service", "Result"));
            assertEquals(filesBefore + 1, profiles(m), "the partial interval written at stop");

            // An upgrade keeps the admin's choice: a disabled, stopped service is neither enabled nor started again.
            m.check(30, "systemctl", "disable", "loupe");
            m.check(600, "dpkg", "-i", NspawnMachine.PACKAGE);
            assertEquals("disabled", m.run(30, "systemctl", "is-enabled", "loupe").output().strip());
            assertEquals("inactive", m.property("loupe.service", "ActiveState"));

            // Exposure as systemd rates the unit in place.
            String security = m.run(60, "systemd-analyze", "security", "loupe.service").output();
            Matcher e = Pattern.compile("Overall exposure level for loupe.service: (\\d+\\.\\d)").matcher(security);
            assertTrue(e.find(), security);
            double exposure = Double.parseDouble(e.group(1));
            System.out.println("systemd-analyze security loupe.service: " + exposure);
            assertTrue(exposure <= 3.0, security);

            // Remove keeps the state; a reinstall before purge brings the service back as it was when removed
            // (enabled here, so started); purge deletes the state.
            m.check(30, "systemctl", "enable", "loupe");
            m.check(300, "apt-get", "remove", "-y", "loupe");
            assertTrue(Files.isDirectory(m.root().resolve("var/lib/loupe/profiles")), "remove keeps /var/lib/loupe");
            assertEquals("inactive", m.property("loupe.service", "ActiveState"));
            m.check(600, "apt-get", "install", "-y", NspawnMachine.PACKAGE);
            assertEquals("enabled", m.run(30, "systemctl", "is-enabled", "loupe").output().strip());
            assertEquals("active", m.property("loupe.service", "ActiveState"));
            m.check(300, "apt-get", "purge", "-y", "loupe");
            assertFalse(Files.exists(m.root().resolve("var/lib/loupe")), "purge deletes /var/lib/loupe");
            assertFalse(Files.exists(m.root().resolve("etc/loupe/loupe.yaml")), "purge deletes the conffile");
        }
    }

    private static final String SOCKET = "/run/loupe/loupe.sock";
    private static final String[] NOBODY = {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"};
    private static final String HTTP_GET = "/usr/local/bin/loupe-http-get";

    /** The test's HTTP client (http-get.pl: perl-base only) at {@link #HTTP_GET} in the machine. */
    private static void installHttpClient(NspawnMachine m) throws Exception {
        try (var in = SystemdServiceTest.class.getResourceAsStream("http-get.pl")) {
            Path client = m.root().resolve(HTTP_GET.substring(1));
            Files.createDirectories(client.getParent());
            Files.write(client, in.readAllBytes());
        }
    }

    /**
     * GET {@code path} from {@code address} (HOST:PORT or a socket's path) as {@code user} (a setpriv prefix), the
     * body to /var/tmp/loupe-it-{@code name} in the machine, while a shell spins on a CPU (so a profile has samples).
     */
    private static Commands.Result get(NspawnMachine m, String[] user, String address, String path, String name, String token)
            throws Exception {
        List<String> cmd = new java.util.ArrayList<>(List.of("sh", "-c",
                "timeout 4 sh -c 'while :; do :; done' >/dev/null 2>&1 & exec \"$@\"", "get"));
        cmd.addAll(List.of(user));
        cmd.addAll(List.of("perl", HTTP_GET, address, path, "/var/tmp/loupe-it-" + name));
        if (token != null) {
            cmd.add(token);
        }
        return m.run(60, cmd.toArray(String[]::new));
    }

    /** The client printed a status line with {@code code} (HTTP/1.0 or 1.1: the client asks in 1.0). */
    private static void assertStatus(int code, Commands.Result r, String what) {
        assertTrue(r.exit() == 0 && r.output().strip().matches("HTTP/1\\.[01] " + code + " .*"), what + ": " + r.output());
    }

    private static byte[] randomBytes(int n) {
        byte[] b = new byte[n];
        new java.security.SecureRandom().nextBytes(b);
        return b;
    }

    private static String body(NspawnMachine m, String name) throws Exception {
        return Files.readString(m.root().resolve("var/tmp/loupe-it-" + name));
    }

    /** The fetched file is a CPU profile with samples, and the real go tool pprof reads it. */
    private static void assertReadableProfile(NspawnMachine m, String name) throws Exception {
        Path file = m.root().resolve("var/tmp/loupe-it-" + name);
        Profile p = PprofFiles.parse(Files.readAllBytes(file));
        assertTrue(p.getSampleCount() > 0, name + " has samples");
        String top = PprofTool.run("-top", file.toString());
        assertTrue(top.contains("Type: cpu"), top);
    }

    /** A date or a time at the start of a line: ISO 8601 (the agent's own format off systemd), syslog's, or a bare time. */
    private static final Pattern STAMPED = Pattern.compile("^\\s*(\\d{4}-\\d{2}-\\d{2}|[A-Z][a-z]{2} [ \\d]\\d \\d{2}:|\\d{2}:\\d{2}:\\d{2})");

    /**
     * {@code journal} ({@code journalctl -o cat}: the messages as the unit wrote them) has the agent's line containing
     * {@code message} in the journal form, "LEVEL logger: message", and no line that starts with a date or time.
     */
    private static void assertAgentLinesUnstamped(String journal, String message) {
        List<String> lines = journal.lines().toList();
        String line = lines.stream().filter(l -> l.contains(message)).findFirst()
                .orElseThrow(() -> new AssertionError("no line with '" + message + "' in\n" + journal));
        assertTrue(line.matches("[A-Z]+ dev\\.loupe\\.[\\w.$]+: " + Pattern.quote(message) + ".*"),
                "'LEVEL logger: message', nothing before the level: " + line);
        for (String l : lines) {
            assertFalse(STAMPED.matcher(l).find(), "a line with a time of its own: " + l + "\nin\n" + journal);
        }
    }

    /** Whether {@code pkg} is installed in the machine. */
    private static boolean installed(NspawnMachine m, String pkg) throws Exception {
        return m.run(30, "dpkg-query", "-W", "-f", "${Status}", pkg).output().startsWith("install ok installed");
    }

    private static String[] cmd(String... command) {
        String[] all = Arrays.copyOf(CLEAN_ENV, CLEAN_ENV.length + command.length);
        System.arraycopy(command, 0, all, CLEAN_ENV.length, command.length);
        return all;
    }

    private static int profiles(NspawnMachine m) throws Exception {
        return cpuFiles(m).size();
    }

    /** The service's CPU profiles, oldest first (names sort by time). */
    private static List<Path> cpuFiles(NspawnMachine m) throws Exception {
        Path d = m.root().resolve("var/lib/loupe/profiles");
        if (!Files.isDirectory(d)) {
            return List.of();
        }
        try (var s = Files.list(d)) {
            return s.filter(p -> p.getFileName().toString().startsWith("cpu-")).sorted().toList();
        }
    }

    /** The first of {@code files} that has samples. */
    private static Optional<Path> withSamples(List<Path> files) throws Exception {
        for (Path f : files) {
            if (PprofFiles.parse(Files.readAllBytes(f)).getSampleCount() > 0) {
                return Optional.of(f);
            }
        }
        return Optional.empty();
    }

    /** A sample's string labels. */
    private static Map<String, String> strLabels(Profile p, int sample) {
        Map<String, String> m = new TreeMap<>();
        for (var l : p.getSample(sample).getLabelList()) {
            if (l.getStr() != 0) {
                m.put(p.getStringTable((int) l.getKey()), p.getStringTable((int) l.getStr()));
            }
        }
        return m;
    }

    private static String field(String status, String name) {
        Matcher m = Pattern.compile("(?m)^" + name + ":\\s*(.+)$").matcher(status);
        assertTrue(m.find(), name + " in\n" + status);
        return m.group(1).strip();
    }
}
