package io.dilu.e2e.demo;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.loadgen.LoadResult;
import io.dilu.loadgen.Outcome;
import io.dilu.loadgen.RequestRecord;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The demo's load story and the summary it tells from what the run saw, on made-up runs. */
class ClusterDemoTest {

    @Test
    void theScaledFunctionsLoadHasOneBurstWithinItsLimitAndOneBeyondIt() {
        assertThat(ClusterDemo.scaledRate(10)).isEqualTo(24);
        assertThat(ClusterDemo.scaledRate(25)).as("beyond 40 rps at the request, within 80 at the limit").isEqualTo(64);
        assertThat(ClusterDemo.scaledRate(50)).as("twice what one instance serves at its limit").isEqualTo(160);
        assertThat(ClusterDemo.scaledRate(100)).isEqualTo(24);
        assertThat(ClusterDemo.scaledRate(ClusterDemo.STORY_SECONDS + 50)).as("the story repeats").isEqualTo(160);
    }

    @Test
    void theStorySaysWhatEachBurstDidAndWhereTheLateRequestsWere() {
        int seconds = 120;
        ClusterDemo.Pods pods = new ClusterDemo.Pods(seconds);
        for (int t = 0; t < seconds; t++) {
            pods.total[t] = t >= 49 && t < 92 ? 3 : 1;
            pods.readyCount[t] = t >= 52 && t < 92 ? 3 : 1;
        }
        List<double[]> grants = List.of(new double[] {20, 21}, new double[] {25, 37.6}, new double[] {30, 35});
        List<RequestRecord> requests = new ArrayList<>();
        for (int t = 0; t < seconds; t++) {
            boolean late = t >= 45 && t < 52; // the second burst's first seconds
            requests.add(new RequestRecord(t, 0, new Outcome.Answered(200, late ? 2.5 : 0.05)));
        }
        requests.add(new RequestRecord(10, 0, new Outcome.Failed(Outcome.Failure.TIMEOUT)));

        List<String> story = ClusterDemo.story(pods, grants, seconds, new LoadResult("bert-large", requests), 0.2);

        assertThat(story).hasSize(3);
        assertThat(story.get(0)).contains("absorbed vertically, still 1 pod(s)").contains("37.6%");
        assertThat(story.get(1)).contains("scaled out at t=49 s to 3 pods", "all ready at t=52 s", "back to 1 at t=92 s");
        // 7 late of the 30 due at t=45–75; 1 failed of the 91 others
        assertThat(story.get(2)).contains("23.3% of the requests due at t=45–75 s", "1.10% of the others");
    }

    @Test
    void aBurstThatScaledNothingIsSaidSo() {
        ClusterDemo.Pods pods = new ClusterDemo.Pods(120);
        java.util.Arrays.fill(pods.total, 1);
        java.util.Arrays.fill(pods.readyCount, 1);
        List<String> story = ClusterDemo.story(pods, List.of(), 120, new LoadResult("bert-large", List.of()), 0.2);
        assertThat(story).containsExactly(
                "the burst to 64 rps (t=20–30 s): absorbed vertically, still 1 pod(s)",
                "the burst to 160 rps (t=45–60 s): no scale-out");
    }
}
