package dev.loupe.agent.labels;

import dev.loupe.unwinder.fuzz.FuzzInput;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

/**
 * Fuzz target for {@link CgroupLabels#parse} and {@link CgroupPath}: {@code /proc/PID/cgroup}, whose paths name
 * cgroups a user with a delegated subtree (systemd --user, rootless containers) creates with any name but '/' and
 * '\n'. The first byte picks raw text, or a cgroup v2 line the kernel would write: a known prefix (a system
 * service, a user manager's unit, a container scope) and then components from the input. Nothing may escape;
 * labels must be what they claim (a unit name from the path, a 64-hex container id from the text, a user unit
 * only under {@code user@UID.service}), and in the rendered case the components a user adds under the prefix must
 * not change the units the prefix names.
 */
public final class CgroupFuzzTarget {
    private static final Pattern UNIT = Pattern.compile(
            "[A-Za-z0-9:_.\\\\@-]+\\.(service|socket|device|mount|automount|swap|target|path|timer|slice|scope)");
    private static final Pattern HEX64 = Pattern.compile("[0-9a-f]{64}");
    private static final Pattern CONTAINER_COMPONENT = Pattern.compile(
            "_?(?:(?:docker|cri-containerd|crio|libpod|nerdctl)-)?([0-9a-f]{64})(?:\\.scope)?");
    private static final String ID = "4f2b8e6a9c3d1e0f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f";

    private CgroupFuzzTarget() {}

    public static void fuzzerTestOneInput(byte[] data) {
        FuzzInput in = new FuzzInput(data);
        if ((in.u8() & 1) == 0) {
            String text = new String(in.rest(), StandardCharsets.UTF_8);
            check(text, CgroupLabels.parse(text));
            return;
        }
        String[][] prefixes = {
                {"/system.slice/nginx.service", "nginx.service", ""},
                {"/user.slice/user-1000.slice/user@1000.service/app.slice/podman-4711.scope", "user@1000.service", "podman-4711.scope"},
                {"/system.slice/docker-" + ID + ".scope", "docker-" + ID + ".scope", ""},
                {"/kubepods.slice/kubepods-burstable.slice/kubepods-pod1.slice/cri-containerd-" + ID + ".scope", "", ""},
                {"/init.scope", "init.scope", ""}};
        String[] p = prefixes[in.intIn(0, prefixes.length - 1)];
        int n = in.intIn(0, 4);
        List<String> added = new ArrayList<>();
        StringBuilder path = new StringBuilder(p[0]);
        for (int i = 0; i < n; i++) {
            String c = in.string(80).replace("/", "").replace("\n", "").replace("\0", "");
            if (!c.isEmpty()) {
                added.add(c);
                path.append('/').append(c);
            }
        }
        String text = (in.bool() ? "12:pids:/\n1:name=systemd:/\n" : "") + "0::" + path + "\n";
        CgroupLabels l = CgroupLabels.parse(text);
        check(text, l);
        boolean unitPrefix = !p[1].isEmpty() && !p[1].endsWith(".slice");
        if (unitPrefix && (!l.systemdUnit().equals(p[1]) || (!p[2].isEmpty() && !l.systemdUserUnit().equals(p[2])))) {
            throw new IllegalStateException("components added under " + p[0] + " changed its units to " + l + ": " + added);
        }
        String innermost = p[0].contains(ID) ? ID : "";
        for (String c : added) {
            var m = CONTAINER_COMPONENT.matcher(c);
            if (m.matches()) {
                innermost = m.group(1);
            }
        }
        if (!l.containerId().equals(innermost)) {
            throw new IllegalStateException("container id '" + l.containerId() + "', the innermost is '" + innermost + "': " + text);
        }
    }

    private static void check(String text, CgroupLabels l) {
        if (!l.systemdUnit().isEmpty() && (!UNIT.matcher(l.systemdUnit()).matches() || !text.contains(l.systemdUnit()))) {
            throw new IllegalStateException("unit '" + l.systemdUnit() + "' from " + text);
        }
        if (!l.systemdUserUnit().isEmpty() && (!UNIT.matcher(l.systemdUserUnit()).matches() || !l.systemdUnit().startsWith("user@")
                || !l.systemdUnit().endsWith(".service") || !text.contains(l.systemdUserUnit()))) {
            throw new IllegalStateException("user unit '" + l.systemdUserUnit() + "' under '" + l.systemdUnit() + "' from " + text);
        }
        if (!l.containerId().isEmpty() && (!HEX64.matcher(l.containerId()).matches() || !text.contains(l.containerId()))) {
            throw new IllegalStateException("container id '" + l.containerId() + "' from " + text);
        }
        if (!CgroupLabels.NAMES.containsAll(l.asMap().keySet()) || l.asMap().containsValue("")) {
            throw new IllegalStateException("labels " + l.asMap());
        }
    }

    /** cgroup files of v2, v1 (with systemd's hierarchy) and hybrid hosts, as the kernel writes them; and this JVM's own. */
    public static void writeSeeds(Path dir) throws Exception {
        seed(dir, "v2-service", "0::/system.slice/nginx.service\n");
        seed(dir, "v2-user", "0::/user.slice/user-1000.slice/user@1000.service/app.slice/app-gnome-firefox-4242.scope\n");
        seed(dir, "v2-escaped", "0::/system.slice/_cpu.service/worker\n");
        seed(dir, "v2-k8s", "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod7e3f.slice/cri-containerd-" + ID + ".scope\n");
        seed(dir, "v1", "12:pids:/docker/" + ID + "\n11:memory:/docker/" + ID + "\n1:name=systemd:/system.slice/docker.service\n");
        seed(dir, "hybrid", "10:cpu,cpuacct:/system.slice/crio-conmon-" + ID + ".scope\n1:name=systemd:/\n0::/system.slice/crio-" + ID + ".scope\n");
        seed(dir, "namespaced", "0::/../../system.slice/foo.service\n");
        byte[] self = Files.readAllBytes(Path.of("/proc/self/cgroup"));
        byte[] in = new byte[self.length + 1];
        System.arraycopy(self, 0, in, 1, self.length);
        Files.write(dir.resolve("seed-self"), in);
        Files.write(dir.resolve("seed-rendered-docker"), new byte[] {1, 2, 2, 5, 'w', 'o', 'r', 'k', 'r', 3, 'a', 'b', 'c', 1});
    }

    private static void seed(Path dir, String name, String text) throws Exception {
        byte[] b = text.getBytes(StandardCharsets.UTF_8);
        byte[] in = new byte[b.length + 1];
        System.arraycopy(b, 0, in, 1, b.length);
        Files.write(dir.resolve("seed-" + name), in);
    }
}
