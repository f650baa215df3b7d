package io.dilu.deviceplugin.backstop;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.deviceplugin.backstop.Cgroups.ContainerId;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** Each layout of /proc/<pid>/cgroup a GPU node can show, as the kubelet and the runtimes write them. */
class CgroupsTest {

    private static final String UID = "0f7a1c2e-3b4d-4e5f-8a9b-0c1d2e3f4a5b";
    private static final String UNDERSCORED = UID.replace('-', '_');
    private static final String ID = "4c5f1e0a9d8b7c6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a";
    private static final ContainerId EXPECTED = new ContainerId(UID, ID);

    @Test
    void cgroupV1WithTheCgroupfsDriver() {
        String file = """
                12:pids:/kubepods/burstable/pod%1$s/%2$s
                11:memory:/kubepods/burstable/pod%1$s/%2$s
                10:cpu,cpuacct:/kubepods/burstable/pod%1$s/%2$s
                1:name=systemd:/kubepods/burstable/pod%1$s/%2$s
                0::/
                """.formatted(UID, ID);
        assertThat(Cgroups.parse(file)).contains(EXPECTED);
    }

    @Test
    void guaranteedAndBestEffortPods() {
        assertThat(Cgroups.parse("0::/kubepods/pod%s/%s\n".formatted(UID, ID))).contains(EXPECTED);
        assertThat(Cgroups.parse("4:memory:/kubepods/besteffort/pod%s/%s\n".formatted(UID, ID))).contains(EXPECTED);
    }

    @Test
    void cgroupV1WithTheSystemdDriver() {
        String path = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod%s.slice/docker-%s.scope"
                .formatted(UNDERSCORED, ID);
        assertThat(Cgroups.parse("11:memory:" + path + "\n1:name=systemd:" + path + "\n")).contains(EXPECTED);
    }

    @Test
    void cgroupV2WithTheSystemdDriverAndEachRuntime() {
        for (String runtime : new String[] {"cri-containerd", "crio", "docker"}) {
            assertThat(Cgroups.parse("0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod%s.slice/%s-%s.scope\n"
                    .formatted(UNDERSCORED, runtime, ID))).as(runtime).contains(EXPECTED);
        }
        // A Guaranteed pod's slice sits right under kubepods.slice.
        assertThat(Cgroups.parse("0::/kubepods.slice/kubepods-pod%s.slice/cri-containerd-%s.scope".formatted(UNDERSCORED, ID)))
                .contains(EXPECTED);
    }

    @Test
    void cgroupV2WithTheCgroupfsDriver() {
        assertThat(Cgroups.parse("0::/kubepods/burstable/pod%s/%s\n".formatted(UID, ID))).contains(EXPECTED);
    }

    @Test
    void kindNodesAndContainerdsColonForm() {
        assertThat(Cgroups.parse(("0::/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/"
                + "kubelet-kubepods-besteffort-pod%s.slice/cri-containerd-%s.scope").formatted(UNDERSCORED, ID)))
                .contains(EXPECTED);
        assertThat(Cgroups.parse("0::/system.slice/containerd.service/kubepods-burstable-pod%s.slice:cri-containerd:%s"
                .formatted(UNDERSCORED, ID))).contains(EXPECTED);
    }

    @Test
    void pathsRelativeToTheReadersCgroupNamespace() {
        assertThat(Cgroups.parse("0::/../../kubepods-burstable-pod%s.slice/cri-containerd-%s.scope\n"
                .formatted(UNDERSCORED, ID))).contains(EXPECTED);
    }

    @Test
    void processesOutsidePodsBelongToNoContainer() {
        assertThat(Cgroups.parse("0::/user.slice/user-1000.slice/session-3.scope\n")).isEmpty();
        assertThat(Cgroups.parse("0::/system.slice/nvidia-persistenced.service\n")).isEmpty();
        assertThat(Cgroups.parse("0::/\n")).isEmpty();
        assertThat(Cgroups.parse("")).isEmpty();
        // A pod's own cgroup (no container below it) and CRI-O's conmon are not a container.
        assertThat(Cgroups.parse("0::/kubepods/burstable/pod%s\n".formatted(UID))).isEmpty();
        assertThat(Cgroups.parse("0::/kubepods.slice/kubepods-pod%s.slice/crio-conmon-%s.scope".formatted(UNDERSCORED, ID)))
                .isEmpty();
    }

    @Test
    void linesNamingTwoContainersAreNoAnswer() {
        String other = ID.replace('4', '5');
        assertThat(Cgroups.parse("""
                11:memory:/kubepods/pod%1$s/%2$s
                10:pids:/kubepods/pod%1$s/%3$s
                """.formatted(UID, ID, other))).isEmpty();
    }

    @Test
    void malformedContentIsNoAnswer() {
        assertThat(Cgroups.parse("garbage\n::\n0::/kubepods/podnot-a-uid/" + ID)).isEmpty();
        assertThat(Cgroups.parse("0::/kubepods/pod%s/%s".formatted(UID, ID.substring(1)))).isEmpty();
        assertThat(Cgroups.parse("0::/kubepods/pod%s/%sZ".formatted(UID, ID))).isEmpty();
    }

    @Test
    void containerIdsOfAPodsStatus() {
        assertThat(Cgroups.fromStatus("containerd://" + ID)).contains(ID);
        assertThat(Cgroups.fromStatus("cri-o://" + ID)).contains(ID);
        assertThat(Cgroups.fromStatus("docker://" + ID)).contains(ID);
        assertThat(Cgroups.fromStatus(null)).isEqualTo(Optional.empty());
        assertThat(Cgroups.fromStatus("containerd://short")).isEmpty();
    }
}
