package dev.loupe.agent.labels;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.api.Test;

import java.util.Map;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.params.provider.Arguments.arguments;

class CgroupLabelsTest {
    private static final String ID = "4f9d3c0e1b2a39485766aabbccddeeff00112233445566778899aabbccddeeff";
    private static final String OUTER = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    private static final String POD_UID = "0b1a5e6c-3c1d-4b0f-9f4a-0123456789ab";
    private static final String POD_SLICE_UID = POD_UID.replace('-', '_');

    /** /proc/PID/cgroup as hosts write it → unit, user unit, container id. */
    static Stream<Arguments> cases() {
        return Stream.of(
                arguments("v2 system service", "0::/system.slice/nginx.service\n", "nginx.service", "", ""),
                arguments("v2 template instance", "0::/system.slice/system-getty.slice/getty@tty1.service\n",
                        "getty@tty1.service", "", ""),
                arguments("v2 delegated sub-cgroup", "0::/system.slice/containerd.service/worker-1\n",
                        "containerd.service", "", ""),
                arguments("v2 user service", "0::/user.slice/user-1000.slice/user@1000.service/app.slice/foo.service\n",
                        "user@1000.service", "foo.service", ""),
                arguments("v2 user manager itself", "0::/user.slice/user-1000.slice/user@1000.service/init.scope\n",
                        "user@1000.service", "init.scope", ""),
                arguments("v2 login session", "0::/user.slice/user-1000.slice/session-3.scope\n",
                        "session-3.scope", "", ""),
                arguments("v2 pid 1", "0::/init.scope\n", "init.scope", "", ""),
                arguments("v2 root (kernel threads)", "0::/\n", "", "", ""),
                arguments("escaped unit name", "0::/system.slice/_cpu.service\n", "cpu.service", "", ""),
                arguments("docker, systemd driver", "0::/system.slice/docker-" + ID + ".scope\n",
                        "docker-" + ID + ".scope", "", ID),
                arguments("docker, cgroupfs driver, v2", "0::/docker/" + ID + "\n", "", "", ID),
                arguments("docker, cgroupfs driver, v1",
                        "12:pids:/docker/" + ID + "\n11:memory:/docker/" + ID + "\n4:cpu,cpuacct:/docker/" + ID
                                + "\n1:name=systemd:/docker/" + ID + "\n0::/\n",
                        "", "", ID),
                arguments("kubernetes v2, systemd driver, containerd",
                        "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + POD_SLICE_UID
                                + ".slice/cri-containerd-" + ID + ".scope\n",
                        "cri-containerd-" + ID + ".scope", "", ID),
                arguments("kubernetes v2, systemd driver, CRI-O",
                        "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + POD_SLICE_UID
                                + ".slice/crio-" + ID + ".scope\n",
                        "crio-" + ID + ".scope", "", ID),
                arguments("kubernetes guaranteed pod, v2 systemd driver",
                        "0::/kubepods.slice/kubepods-pod" + POD_SLICE_UID + ".slice/cri-containerd-" + ID + ".scope\n",
                        "cri-containerd-" + ID + ".scope", "", ID),
                arguments("kubernetes v1, cgroupfs driver, burstable",
                        "11:memory:/kubepods/burstable/pod" + POD_UID + "/" + ID + "\n2:cpu,cpuacct:/kubepods/burstable/pod"
                                + POD_UID + "/" + ID + "\n1:name=systemd:/kubepods/burstable/pod" + POD_UID + "/" + ID + "\n",
                        "", "", ID),
                arguments("kubernetes v1, cgroupfs driver, guaranteed",
                        "5:pids:/kubepods/pod" + POD_UID + "/" + ID + "\n1:name=systemd:/kubepods/pod" + POD_UID + "/" + ID + "\n",
                        "", "", ID),
                arguments("kubernetes v1, cgroupfs driver, CRI-O",
                        "1:name=systemd:/kubepods/besteffort/pod" + POD_UID + "/crio-" + ID + "\n", "", "", ID),
                arguments("CRI-O's conmon is no container", "0::/system.slice/crio-conmon-" + ID + ".scope\n",
                        "crio-conmon-" + ID + ".scope", "", ""),
                arguments("podman, v2", "0::/machine.slice/libpod-" + ID + ".scope/container\n",
                        "libpod-" + ID + ".scope", "", ID),
                arguments("podman's conmon is no container", "0::/machine.slice/libpod-conmon-" + ID + ".scope\n",
                        "libpod-conmon-" + ID + ".scope", "", ""),
                arguments("podman, cgroupfs manager", "0::/libpod_parent/libpod-" + ID + "\n", "", "", ID),
                arguments("rootless podman",
                        "0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" + ID + ".scope\n",
                        "user@1000.service", "libpod-" + ID + ".scope", ID),
                arguments("nerdctl", "0::/system.slice/nerdctl-" + ID + ".scope\n", "nerdctl-" + ID + ".scope", "", ID),
                arguments("systemd in a container: the host's unit, the innermost container",
                        "0::/system.slice/docker-" + OUTER + ".scope/system.slice/nginx.service\n",
                        "docker-" + OUTER + ".scope", "", OUTER),
                arguments("kind node running a pod",
                        "0::/system.slice/docker-" + OUTER + ".scope/kubelet.slice/kubelet-kubepods.slice/"
                                + "kubelet-kubepods-besteffort.slice/kubelet-kubepods-besteffort-pod" + POD_SLICE_UID
                                + ".slice/cri-containerd-" + ID + ".scope\n",
                        "docker-" + OUTER + ".scope", "", ID),
                arguments("hybrid: v2 and systemd's v1 agree",
                        "12:pids:/system.slice/sshd.service\n1:name=systemd:/system.slice/sshd.service\n"
                                + "0::/system.slice/sshd.service\n",
                        "sshd.service", "", ""),
                arguments("v1 with an empty unified line: systemd's v1 hierarchy",
                        "4:memory:/system.slice/cron.service\n1:name=systemd:/system.slice/cron.service\n0::/\n",
                        "cron.service", "", ""),
                arguments("v1 without systemd", "4:memory:/process_api/5776b7ea\n3:cpuset:/\n0::/\n", "", "", ""),
                arguments("inside a private cgroup namespace", "0::/../../system.slice/nginx.service\n",
                        "nginx.service", "", ""),
                arguments("short hex is no container id", "0::/docker/4f9d3c0e1b2a\n", "", "", ""),
                arguments("uppercase hex is no container id", "0::/docker/" + ID.toUpperCase() + "\n", "", "", ""),
                arguments("malformed lines are skipped", "garbage\n7:cpu\n\n0::/system.slice/a.service", "a.service", "", ""),
                arguments("empty file", "", "", "", ""));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void readsUnitsAndContainers(String what, String procCgroup, String unit, String userUnit, String container) {
        assertEquals(new CgroupLabels(unit, userUnit, container), CgroupLabels.parse(procCgroup), what);
    }

    @Test
    void asMapHoldsOnlyWhatIsKnown() {
        assertEquals(Map.of(), CgroupLabels.NONE.asMap());
        assertEquals(Map.of("systemd_unit", "user@1000.service", "systemd_user_unit", "foo.service"),
                new CgroupLabels("user@1000.service", "foo.service", "").asMap());
        assertEquals(Map.of("systemd_unit", "docker-" + ID + ".scope", "container_id", ID),
                CgroupLabels.parse("0::/system.slice/docker-" + ID + ".scope").asMap());
    }
}
