package io.dilu.simulator;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class EventPlotTest {

    private static EventSimulation.Point at(double timeS, int gpus) {
        return new EventSimulation.Point(timeS, gpus);
    }

    @Test
    void eachBucketShowsTheMostGpusActiveInItSoNoPeakIsLost() {
        // 720 s in 720 buckets of 1 s.
        List<EventSimulation.Point> series = List.of(at(0, 1), at(100, 3), at(100.5, 2), at(200, 0), at(300.2, 5),
                at(300.7, 0));
        double[][] steps = EventPlot.bucketMax(series, 0, 720);
        assertThat(steps[0]).hasSize(EventPlot.STEPS);
        assertThat(steps[0][0]).isZero();
        assertThat(steps[0][100]).isEqualTo(100);
        assertThat(steps[1][0]).isEqualTo(1);
        assertThat(steps[1][99]).isEqualTo(1);
        assertThat(steps[1][100]).as("3, then 2 within the bucket").isEqualTo(3);
        assertThat(steps[1][101]).isEqualTo(2);
        assertThat(steps[1][199]).isEqualTo(2);
        assertThat(steps[1][200]).as("the change at its start is all the bucket sees").isZero();
        assertThat(steps[1][300]).as("half a second at 5").isEqualTo(5);
        assertThat(steps[1][301]).isZero();
        assertThat(steps[1][719]).isZero();
    }

    @Test
    void aReplayWithoutTimeIsOneStep() {
        double[][] steps = EventPlot.bucketMax(List.of(at(5, 2)), 5, 5);
        assertThat(steps[0]).containsExactly(5);
        assertThat(steps[1]).containsExactly(2);
    }
}
