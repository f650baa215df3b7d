package io.dilu.e2e.demo;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.e2e.cluster.PodLives;
import io.dilu.trials.HostLateness;
import io.dilu.loadgen.LoadResult;
import io.dilu.loadgen.Outcome;
import io.dilu.loadgen.RequestRecord;
import java.util.ArrayList;
import java.util.List;
import java.util.function.IntToDoubleFunction;
import org.junit.jupiter.api.Test;

/** The demo's load story and the summary it tells from what the run saw, on made-up runs. */
class ClusterDemoTest {

    @Test
    void theScaledFunctionsLoadHasOneBurstWithinItsLimitAndOneBeyondIt() {
        assertThat(ClusterDemo.scaledRate(10)).isEqualTo(24);
        assertThat(ClusterDemo.scaledRate(25)).as("beyond 40 rps at the request, within 80 at the limit").isEqualTo(64);
        assertThat(ClusterDemo.scaledRate(50)).as("twice what one instance serves at its limit").isEqualTo(160);
        assertThat(ClusterDemo.scaledRate(100)).as("long enough for the added pod to be parked").isEqualTo(24);
        assertThat(ClusterDemo.scaledRate(ClusterDemo.THIRD_BURST + 5)).as("the burst that wakes it").isEqualTo(160);
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
        // The scale-out's three pods on one GPU, as issue 47's demo had them: their limits 120% of it, granted 99%.
        String gpu = "GPU-emu-127.0.0.1-2";
        pods.placed.put(0, List.of(new BurstBooks.Placed("bert-large-a", gpu, 40)));
        pods.placed.put(50, List.of(new BurstBooks.Placed("bert-large-a", gpu, 40), new BurstBooks.Placed("bert-large-b", gpu, 40),
                new BurstBooks.Placed("bert-large-c", gpu, 40)));
        List<BurstBooks.Grant> podGrants = new ArrayList<>();
        for (int view : new int[] {55, 60}) {
            for (String pod : List.of("bert-large-a", "bert-large-b", "bert-large-c")) {
                podGrants.add(new BurstBooks.Grant(view, gpu, pod, 33));
            }
        }
        List<RequestRecord> requests = new ArrayList<>();
        for (int t = 0; t < seconds; t++) {
            boolean late = t >= 45 && t < 52; // the second burst's first seconds
            requests.add(new RequestRecord(t, 0, new Outcome.Answered(200, late ? 2.5 : 0.05)));
        }
        requests.add(new RequestRecord(10, 0, new Outcome.Failed(Outcome.Failure.TIMEOUT)));

        List<String> story = ClusterDemo.story(pods, grants, podGrants, seconds, new LoadResult("bert-large", requests), 0.2,
                host(t -> 0.2), List.of());

        assertThat(story).hasSize(3);
        assertThat(story.get(0)).contains("absorbed vertically, still 1 pod(s)").contains("37.6%");
        assertThat(story.get(1)).contains("scaled out at t=49 s to 3 pods", "all ready at t=52 s", "back to 1 at t=92 s");
        assertThat(story.get(2)).isEqualTo("where: at t=52 s its 3 pod(s) sat 3 on GPU-emu-127.0.0.1-2 (their limits 120% of"
                + " the GPU, more than it has; granted 99% of the GPU on average at t=45–75 s)");
        // 7 late of the 20 due while the bursts arrived (15 at t=45–60, 5 at t=115–120), none of the 15 in the queue;
        // 1 failed of the 86 others
        assertThat(ClusterDemo.lateOverBursts(new LoadResult("bert-large", requests), 0.2, host(t -> 0.2), seconds)).isEqualTo("late or failed over the bursts (t=45–75 s and 115–135 s): 20.0% of 35; while the"
                + " bursts arrived (t=45–60 s and 115–125 s) 35.0% of 20, in the queues they left (t=60–75 s and 125–135 s)"
                + " 0.0% of 15; 1.16% of the other 86");
    }

    @Test
    void theSecondBurstsPodIsParkedNotRemovedAndTheThirdBurstWakesIt() {
        int seconds = ClusterDemo.STORY_SECONDS;
        ClusterDemo.Pods pods = new ClusterDemo.Pods(seconds);
        for (int t = 0; t < seconds; t++) {
            pods.total[t] = t >= 49 ? 2 : 1;
            pods.readyCount[t] = t >= 52 && (t < 93 || t >= 117) ? 2 : 1;
            pods.parked[t] = t >= 93 && t < 117 ? 1 : 0;
        }
        List<String> story = ClusterDemo.story(pods, List.of(), List.of(), seconds, new LoadResult("bert-large", List.of()), 0.2,
                new HostLateness(0), List.of(new PodLives.Wake(116.2, 0.71)));
        assertThat(story.get(1)).contains("scaled out at t=49 s to 2 pods", "back to 1 serving at t=93 s, 1 parked (its SM"
                + " request given back, its model kept in GPU memory)");
        assertThat(story.get(story.size() - 2)).isEqualTo("the burst to 160 rps (t=115–125 s): woke 1 parked pod(s) at t=116 s, serving"
                + " 0.71 s after the autoscaler's wake (its model still in GPU memory); no new pod");
        assertThat(story.getLast()).isEqualTo("where: where its pods were at t=117 s was not read");
    }

    @Test
    void theBooksChargeAParkedPodItsMemoryAndNoSm() {
        ClusterDemo.Pods pods = new ClusterDemo.Pods(10);
        for (int t = 0; t < 10; t++) {
            pods.total[t] = 2;
            pods.parked[t] = t < 5 ? 1 : 0;
        }
        ClusterDemo.Inference f = new ClusterDemo.Inference("bert-large", 1, 20, 4096, 200, "", true, 40, 80, t -> 24);
        String books = ClusterDemo.books(pods, f, new PodLives.Totals(1, 8.0, 0, 1, 0.7),
                new LoadResult("bert-large", List.of()));
        // 5 s of one serving pod and 5 s of two at 20% each; 4 GiB a pod for 10 s; DRF: max(0.2, 4/40) per serving pod,
        // 4/40 per parked one
        assertThat(books).isEqualTo("books: 1 cold start(s) after t=0 (1 scale-out, 0 failed wake), 1 wake(s) (mean 0.70 s);"
                + " SVR 0.00%; SM GPU-s 3.0 (a parked pod 0), GPU memory 80 GiB·s, dominant-share GPU-s 3.5");
    }

    @Test
    void aBurstThatScaledNothingIsSaidSo() {
        ClusterDemo.Pods pods = new ClusterDemo.Pods(120);
        java.util.Arrays.fill(pods.total, 1);
        java.util.Arrays.fill(pods.readyCount, 1);
        List<String> story = ClusterDemo.story(pods, List.of(), List.of(), 120, new LoadResult("bert-large", List.of()), 0.2,
                new HostLateness(0), List.of());
        assertThat(story).containsExactly(
                "the burst to 64 rps (t=20–30 s): absorbed vertically, still 1 pod(s)",
                "the burst to 160 rps (t=45–60 s): no scale-out");
    }

    /**
     * The run of issue 34 (a machine at load 8–16): the scale-out came at t=61 s, after the burst, and the summary said
     * "scaled out at t=61 s … back to 1 at t=60 s", the scale-in read from before the scale-out.
     */
    @Test
    void aScaleOutAfterTheBurstIsNeverSaidToEndBeforeItBegan() {
        ClusterDemo.Pods pods = new ClusterDemo.Pods(120);
        for (int t = 0; t < 120; t++) {
            pods.total[t] = t >= 61 && t < 101 ? 2 : 1;
            pods.readyCount[t] = t >= 63 && t < 101 ? 2 : 1;
        }
        List<String> story = ClusterDemo.story(pods, List.of(), List.of(), 120, new LoadResult("bert-large", List.of()), 0.2,
                new HostLateness(0), List.of());
        assertThat(story.get(1)).contains("scaled out at t=61 s to 2 pods", "all ready at t=63 s", "back to 1 at t=101 s");
    }

    @Test
    void aSecondThePodsWereNotReadInIsNeitherAScaleOutNorAScaleIn() {
        ClusterDemo.Pods pods = new ClusterDemo.Pods(120);
        for (int t = 0; t < 120; t++) {
            pods.total[t] = t >= 49 && t < 92 ? 3 : 1;
            pods.readyCount[t] = t >= 52 && t < 92 ? 3 : 1;
        }
        pods.total[46] = ClusterDemo.Pods.UNKNOWN;
        pods.total[70] = ClusterDemo.Pods.UNKNOWN;
        pods.readyCount[70] = ClusterDemo.Pods.UNKNOWN;
        List<String> story = ClusterDemo.story(pods, List.of(), List.of(), 120, new LoadResult("bert-large", List.of()), 0.2,
                new HostLateness(0), List.of());
        assertThat(story.get(1)).contains("scaled out at t=49 s to 3 pods", "all ready at t=52 s", "back to 1 at t=92 s");
    }

    @Test
    void podsNeverReadTellNoStory() {
        List<String> story = ClusterDemo.story(new ClusterDemo.Pods(120), List.of(), List.of(), 120,
                new LoadResult("bert-large", List.of()), 0.2, new HostLateness(0), List.of());
        assertThat(story).containsExactly("its pods were not read from the API server before or during the first burst:"
                + " no story to tell");
    }

    @Test
    void anOverloadedHostIsNamedWithItsFigureAndDiluIsNeitherCreditedNorBlamedForWhatItDid() {
        ClusterDemo.Pods pods = new ClusterDemo.Pods(120);
        for (int t = 0; t < 120; t++) {
            pods.total[t] = t >= 61 && t < 101 ? 2 : 1;
            pods.readyCount[t] = t >= 70 && t < 101 ? 2 : 1;
        }
        List<RequestRecord> requests = new ArrayList<>();
        for (int t = 0; t < 120; t++) {
            requests.add(new RequestRecord(t, 0, new Outcome.Answered(200, t >= 45 && t < 75 ? 20.7 : 0.05)));
        }
        // 40 ms late through both bursts, 0.2 ms otherwise
        HostLateness host = host(t -> t >= 20 && t < 75 ? 40 : 0.2);

        List<String> story = ClusterDemo.story(pods, List.of(new double[] {25, 38}), List.of(), 120, new LoadResult("bert-large", requests),
                0.2, host, List.of());

        assertThat(story.get(0)).doesNotContain("absorbed vertically")
                .contains("still 1 pod(s); its largest grant 38.0% of a GPU; the host was overloaded then (a 5 ms wake-up late"
                        + " by p99 40.0 ms): neither Dilu's doing nor a measure of it");
        assertThat(story.get(1)).contains("scaled out at t=61 s to 2 pods", "the host was overloaded at t=45–75 s");
        assertThat(story.get(2)).isEqualTo("where: where its pods were at t=70 s was not read");
        assertThat(ClusterDemo.lateOverBursts(new LoadResult("bert-large", requests), 0.2, host, 120)).startsWith("late or failed over the bursts (t=45–75 s and 115–135 s): 85.7% of 35; while the"
                + " bursts arrived (t=45–60 s and 115–125 s) 75.0% of 20, in the queues they left (t=60–75 s and 125–135 s)"
                + " 100.0% of 15; 0.00% of the other 85; the host was overloaded in the bursts")
                .contains("; the host was overloaded in the other seconds (a 5 ms wake-up late by p99 40.0");
        assertThat(ClusterDemo.hostSummary(host, 120)).hasSize(2).last().asString()
                .startsWith("the HOST WAS OVERLOADED in 55 of the run's 120 seconds (a 5 ms wake-up later than one 5 ms token"
                        + " period at p99 in that second; over the run, p99 40.0 ms)")
                .contains("neither Dilu's doing nor a measure of it");
    }

    @Test
    void aHostThatKeptUpIsOneLineOfItsLateness() {
        assertThat(ClusterDemo.hostSummary(host(t -> 0.2), 120)).containsExactly("host: a thread of this process"
                + " waking every 5 ms on absolute deadlines, as the node agents' token loops do, came late by p50 0.20 ms,"
                + " p99 0.20 ms, max 0.2 ms over the run");
    }

    /** A probe's record of 120 s: every 5 ms wake-up of second t late by {@code lateMs} of t. */
    private static HostLateness host(IntToDoubleFunction lateMs) {
        HostLateness host = new HostLateness(0);
        for (long deadline = 0; deadline < 120_000_000_000L; deadline += HostLateness.PERIOD_NANOS) {
            host.record(deadline, Math.round(lateMs.applyAsDouble((int) (deadline / 1_000_000_000L)) * 1e6));
        }
        return host;
    }

    /** Where a pod sits and its limit are read as the scheduler extender reads them: an absent limit is the default. */
    @Test
    void aPodsPlacementAndLimitAreReadAsTheExtenderReadsThem() {
        java.util.function.BiFunction<String, java.util.Map<String, String>, io.fabric8.kubernetes.api.model.Pod> pod =
                (name, annotations) -> new io.fabric8.kubernetes.api.model.PodBuilder().withNewMetadata().withName(name)
                        .withNamespace("demo").withUid(name).withAnnotations(annotations).endMetadata().withNewSpec()
                        .addNewContainer().withName("server").withNewResources().addToLimits(io.dilu.core.contract.DiluNames.GPU_SM,
                                new io.fabric8.kubernetes.api.model.Quantity("20")).endResources().endContainer().endSpec().build();
        String assigned = io.dilu.core.contract.DiluNames.ASSIGNED_GPUS;
        assertThat(ClusterDemo.placed(List.of(
                pod.apply("b", java.util.Map.of(assigned, "GPU-emu-127.0.0.1-2")),
                pod.apply("a", java.util.Map.of(assigned, "GPU-emu-127.0.0.1-1", io.dilu.core.contract.DiluNames.SM_LIMIT, "30")),
                pod.apply("pending", java.util.Map.of())))).containsExactly(
                        new BurstBooks.Placed("a", "GPU-emu-127.0.0.1-1", 30),
                        new BurstBooks.Placed("b", "GPU-emu-127.0.0.1-2", io.dilu.core.quota.Quota.defaultLimit(20)));
    }
}
