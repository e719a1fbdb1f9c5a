package dev.loupe.agent.labels;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * What a process's cgroup says about it: the systemd unit it runs in (as {@code systemctl status PID} and
 * {@code ps -o unit} name it: the system manager's unit), the user manager's unit when it runs under
 * {@code user@UID.service}, and the id of the innermost container it is in. Each is "" when the cgroup does
 * not say. Read from the host's cgroup namespace: an agent in a private one sees paths relative to its own
 * cgroup and learns little.
 */
public record CgroupLabels(String systemdUnit, String systemdUserUnit, String containerId) {
    public static final CgroupLabels NONE = new CgroupLabels("", "", "");
    /** The label names {@link #asMap} uses, in its order. */
    public static final List<String> NAMES = List.of("systemd_unit", "systemd_user_unit", "container_id");

    public CgroupLabels {
        Objects.requireNonNull(systemdUnit, "systemdUnit");
        Objects.requireNonNull(systemdUserUnit, "systemdUserUnit");
        Objects.requireNonNull(containerId, "containerId");
    }

    /**
     * From the text of {@code /proc/PID/cgroup}: lines {@code ID:CONTROLLERS:PATH}, cgroup v2's
     * {@code 0::PATH} and v1's per-controller lines (systemd's own hierarchy is {@code name=systemd}).
     * Units come from the v2 path, else systemd's v1 hierarchy; the container id from any line, v2 first.
     * Malformed lines are skipped.
     */
    public static CgroupLabels parse(String procCgroup) {
        String unified = null;
        String systemdV1 = null;
        List<String> others = new ArrayList<>();
        for (String line : procCgroup.split("\n")) {
            String[] f = line.split(":", 3);
            if (f.length != 3 || !f[2].startsWith("/")) {
                continue;
            }
            if (f[0].equals("0") && f[1].isEmpty()) {
                unified = f[2];
            } else if (List.of(f[1].split(",")).contains("name=systemd")) {
                systemdV1 = f[2];
            } else {
                others.add(f[2]);
            }
        }
        List<String> unitPaths = new ArrayList<>();
        if (unified != null) {
            unitPaths.add(unified);
        }
        if (systemdV1 != null) {
            unitPaths.add(systemdV1);
        }
        String unit = "";
        String userUnit = "";
        for (String path : unitPaths) {
            unit = CgroupPath.systemUnit(path);
            if (!unit.isEmpty()) {
                userUnit = CgroupPath.userUnit(path);
                break;
            }
        }
        List<String> all = new ArrayList<>(unitPaths);
        all.addAll(others);
        String container = "";
        for (String path : all) {
            container = CgroupPath.containerId(path);
            if (!container.isEmpty()) {
                break;
            }
        }
        return new CgroupLabels(unit, userUnit, container);
    }

    /** As pprof/series labels: {@code systemd_unit}, {@code systemd_user_unit}, {@code container_id}, set ones only. */
    public Map<String, String> asMap() {
        Map<String, String> m = new LinkedHashMap<>();
        List<String> values = List.of(systemdUnit, systemdUserUnit, containerId);
        for (int i = 0; i < NAMES.size(); i++) {
            if (!values.get(i).isEmpty()) {
                m.put(NAMES.get(i), values.get(i));
            }
        }
        return m;
    }
}
