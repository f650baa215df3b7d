package io.dilu.deviceplugin.agent;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.core.contract.DiluNames;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class PodMatcherTest {

    static PodView pod(String name, int createdSecond, String assigned, int... sm) {
        List<PodView.GpuContainer> containers = new java.util.ArrayList<>();
        for (int i = 0; i < sm.length; i++) {
            containers.add(new PodView.GpuContainer("c" + i, sm[i]));
        }
        return new PodView("default", name, "uid-" + name, Instant.ofEpochSecond(createdSecond), false,
                assigned == null ? Map.of() : Map.of(DiluNames.ASSIGNED_GPUS, assigned), containers, false);
    }

    @Test
    void theContainerBeingAdmittedIsTheOldestUnownedOneOfThatSizeAssignedToThatGpu() {
        List<PodView> pods = List.of(pod("late", 20, "GPU-a", 30), pod("early", 10, "GPU-a", 30),
                pod("elsewhere", 5, "GPU-b", 30), pod("bigger", 1, "GPU-a", 40));
        assertThat(PodMatcher.forAllocate(pods, Set.of(), Set.of("GPU-a"), 30)).hasValueSatisfying(c ->
                assertThat(c.ref()).isEqualTo(new ContainerRef("default", "early", "c0")));
        Set<ContainerRef> owned = Set.of(new ContainerRef("default", "early", "c0"));
        assertThat(PodMatcher.forAllocate(pods, owned, Set.of("GPU-a"), 30).map(PodMatcher.Candidate::ref))
                .contains(new ContainerRef("default", "late", "c0"));
    }

    @Test
    void containersOfOnePodAreTakenInTheirOrder() {
        List<PodView> pods = List.of(pod("two", 1, "GPU-a,GPU-b", 30, 30));
        assertThat(PodMatcher.forAllocate(pods, Set.of(), Set.of("GPU-b"), 30).map(PodMatcher.Candidate::ref))
                .contains(new ContainerRef("default", "two", "c1"));
        assertThat(PodMatcher.forAllocate(pods, Set.of(), Set.of("GPU-a"), 30).map(PodMatcher.Candidate::ref))
                .contains(new ContainerRef("default", "two", "c0"));
    }

    @Test
    void withoutAMatchingAssignmentAnUnassignedPodComesBeforeOneAssignedElsewhere() {
        List<PodView> pods = List.of(pod("elsewhere", 1, "GPU-b", 30), pod("unassigned", 2, null, 30));
        assertThat(PodMatcher.forAllocate(pods, Set.of(), Set.of("GPU-a"), 30).map(c -> c.ref().pod())).contains("unassigned");
        assertThat(PodMatcher.forAllocate(List.of(pods.get(0)), Set.of(), Set.of("GPU-a"), 30).map(c -> c.ref().pod()))
                .contains("elsewhere");
        assertThat(PodMatcher.forAllocate(pods, Set.of(), Set.of("GPU-a"), 50)).isEmpty();
    }

    @Test
    void finishedPodsTakeNoShare() {
        PodView done = new PodView("default", "done", "u", Instant.EPOCH, true, Map.of(DiluNames.ASSIGNED_GPUS, "GPU-a"),
                List.of(new PodView.GpuContainer("c0", 30)), false);
        assertThat(PodMatcher.forAllocate(List.of(done), Set.of(), Set.of("GPU-a"), 30)).isEmpty();
    }

    @Test
    void thePreferredGpuIsTheAssignedOneWhenItStillHasRoom() {
        List<PodView> pods = List.of(pod("p", 1, "GPU-b", 30));
        assertThat(PodMatcher.preferredShares(pods, Set.of(), 30, Map.of("GPU-a", 100, "GPU-b", 30))).contains(Map.of("GPU-b", 30));
        assertThat(PodMatcher.preferredShares(pods, Set.of(), 30, Map.of("GPU-a", 100, "GPU-b", 29))).isEmpty();
        assertThat(PodMatcher.preferredShares(List.of(pod("q", 1, "GPU-a,bad,", 30)), Set.of(), 30, Map.of("GPU-a", 100)))
                .as("a malformed annotation assigns nothing").isEmpty();
    }
}
