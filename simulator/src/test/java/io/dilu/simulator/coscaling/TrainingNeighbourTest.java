package io.dilu.simulator.coscaling;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import io.dilu.loadgen.RateTrace;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class TrainingNeighbourTest {

    static final FunctionProfile MID = FunctionProfile.midSize("f");

    @Test
    void underDiluTheWorkerTakesWhatTheInstanceLeavesWhileStaticSharesKeepItAtItsRequest() {
        double[] r = new double[600];
        Arrays.fill(r, 0, 300, 20); // well under one instance's request rate, then idle
        RateTrace trace = new RateTrace("quiet", r);
        TrainingNeighbour worker = TrainingNeighbour.ofPercent(40);
        CoScalingSimulation.Result dilu = CoScalingSimulation.run(trace, MID, DiluPolicy.withRoom(MID, worker.room(MID)));
        CoScalingSimulation.Result fastgs = CoScalingSimulation.run(trace, MID, new FastGsPolicy(MID));
        // Dilu's instance holds its 20% request, the worker the other 80% (its limit), except while the instance
        // works off the backlog of its cold start near its limit.
        assertThat(worker.meanShareBeside(dilu)).isGreaterThan(0.75).isLessThanOrEqualTo(0.8);
        assertThat(worker.meanShareBeside(fastgs)).isCloseTo(0.4, within(1e-9));
        assertThat(worker.meanShareBeside(CoScalingSimulation.run(trace, MID, KpaPolicy.exclusive(MID)))).isNaN();
    }

    @Test
    void theWorkersGuaranteeBoundsTheInstancesRoomToGrow() {
        FunctionProfile wide = new FunctionProfile("wide", 0.2, 0.05, 50, 150, 0.4, 0.9, 160, 8);
        // 1 - 0.5 × 0.6 - 0.4 = 0.3 free of the 0.5 from request to limit.
        assertThat(new TrainingNeighbour(0.6, 1.0).room(wide)).isCloseTo(0.6, within(1e-9));
        assertThat(TrainingNeighbour.ofPercent(40).room(MID)).as("a mid-size instance keeps its whole way").isEqualTo(1);
        assertThatThrownBy(() -> TrainingNeighbour.ofPercent(0)).hasMessageContaining("--training").hasMessageContaining("1..100");
    }
}
