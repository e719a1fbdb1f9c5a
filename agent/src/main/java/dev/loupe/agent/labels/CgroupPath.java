package dev.loupe.agent.labels;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reading one cgroup path the way systemd and the container runtimes write it. Units: leading slices are
 * skipped and the next component is the unit ({@code /system.slice/nginx.service/worker} →
 * {@code nginx.service}); under a user manager ({@code user@1000.service}) the same again gives the user
 * unit. Containers: the innermost component that is a 64-hex id, bare (cgroupfs driver:
 * {@code /docker/ID}, {@code /kubepods/burstable/podUID/ID}) or in a runtime's scope
 * ({@code docker-ID.scope}, {@code cri-containerd-ID.scope}, {@code crio-ID.scope},
 * {@code libpod-ID.scope}, {@code nerdctl-ID.scope}); conmon's scopes ({@code crio-conmon-ID.scope}) are
 * the monitor, not the container.
 */
final class CgroupPath {
    private static final Pattern UNIT = Pattern.compile(
            "[A-Za-z0-9:_.\\\\@-]+\\.(service|socket|device|mount|automount|swap|target|path|timer|slice|scope)");
    private static final Pattern CONTAINER = Pattern.compile(
            "(?:(?:docker|cri-containerd|crio|libpod|nerdctl)-)?([0-9a-f]{64})(?:\\.scope)?");

    private CgroupPath() {}

    /** The system manager's unit, or "". */
    static String systemUnit(String path) {
        String[] c = components(path);
        int i = skipSlices(c, 0);
        return i < c.length && isUnit(c[i]) ? c[i] : "";
    }

    /** The user manager's unit when the system unit is {@code user@UID.service}, or "". */
    static String userUnit(String path) {
        String[] c = components(path);
        int i = skipSlices(c, 0);
        if (i >= c.length || !c[i].startsWith("user@") || !c[i].endsWith(".service")) {
            return "";
        }
        int j = skipSlices(c, i + 1);
        return j < c.length && isUnit(c[j]) ? c[j] : "";
    }

    /** The innermost container id in the path, or "". */
    static String containerId(String path) {
        String[] c = components(path);
        for (int i = c.length - 1; i >= 0; i--) {
            Matcher m = CONTAINER.matcher(c[i]);
            if (m.matches()) {
                return m.group(1);
            }
        }
        return "";
    }

    private static int skipSlices(String[] c, int from) {
        int i = from;
        while (i < c.length && c[i].endsWith(".slice")) {
            i++;
        }
        return i;
    }

    private static boolean isUnit(String component) {
        return UNIT.matcher(component).matches();
    }

    /**
     * The path's components, unescaped as systemd escapes them ({@code _} before names that could clash
     * with cgroup files, e.g. {@code _cpu.service}); empty and {@code ..} components (paths relative to a
     * cgroup namespace) dropped.
     */
    private static String[] components(String path) {
        return java.util.Arrays.stream(path.split("/"))
                .filter(s -> !s.isEmpty() && !s.equals(".."))
                .map(s -> s.startsWith("_") ? s.substring(1) : s)
                .toArray(String[]::new);
    }
}
