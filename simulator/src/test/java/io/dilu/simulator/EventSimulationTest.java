package io.dilu.simulator;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.core.placement.ComplementaryPlacement;
import io.dilu.core.placement.ExclusivePlacement;
import java.util.List;
import org.junit.jupiter.api.Test;

class EventSimulationTest {

    private static EventCsv.Start start(double t, String id, double request, double limit) {
        return new EventCsv.Start(t, new SimInstance(id, id, InstanceType.INFERENCE, 1, request, limit, 4096));
    }

    @Test
    void departuresFreeGpusAndANewGpuOpensOnlyWhenNoActiveOneFits() {
        List<EventCsv.Event> events = List.of(
                start(0, "a", 0.6, 0.8),
                start(1, "b", 0.3, 0.5),          // fits beside a: still one GPU
                start(2, "c", 0.5, 0.7),          // Σrequest 1.4 > Ω: a second GPU
                new EventCsv.Stop(3, "c"),        // that GPU is idle again: one active
                new EventCsv.Stop(5, "a"),
                new EventCsv.Stop(6, "b"));       // none
        EventSimulation.Result r = EventSimulation.run(new ComplementaryPlacement(),
                ClusterShape.PAPER.nodesFor(events.stream().filter(e -> e instanceof EventCsv.Start)
                        .map(e -> ((EventCsv.Start) e).asked()).toList()), events);
        assertThat(r.peakGpus()).isEqualTo(2);
        assertThat(r.peakTimeS()).isEqualTo(2);
        assertThat(r.series()).containsExactly(new EventSimulation.Point(0, 1), new EventSimulation.Point(2, 2),
                new EventSimulation.Point(3, 1), new EventSimulation.Point(6, 0));
        // 1 GPU for 2 s, 2 for 1 s, 1 for 3 s, over 6 s
        assertThat(r.meanGpus()).isEqualTo(7.0 / 6);
        assertThat(r.unplaced()).isZero();
    }

    @Test
    void exclusiveNeedsAGpuPerInstanceAtThePeak() {
        List<EventCsv.Event> events = EventGenerator.paperMix(300, 11);
        var nodes = ClusterShape.PAPER.nodesFor(events.stream().filter(e -> e instanceof EventCsv.Start)
                .map(e -> ((EventCsv.Start) e).asked()).toList());
        EventSimulation.Result dilu = EventSimulation.run(new ComplementaryPlacement(), nodes, events);
        EventSimulation.Result exclusive = EventSimulation.run(new ExclusivePlacement(), nodes, events);
        assertThat(dilu.unplaced()).isZero();
        assertThat(dilu.peakGpus()).isLessThan(exclusive.peakGpus());
        assertThat(dilu.meanGpus()).isLessThan(exclusive.meanGpus());
        assertThat(exclusive.series().getLast().activeGpus()).as("every instance stopped").isZero();
    }
}
