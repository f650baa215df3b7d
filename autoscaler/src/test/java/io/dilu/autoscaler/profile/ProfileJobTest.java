package io.dilu.autoscaler.profile;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.core.profiling.TrialReport;
import io.dilu.kube.profile.GpuFunctionProfile;
import io.dilu.kube.profile.ProfileSpec;
import io.dilu.kube.profile.ProfileStatus;
import io.dilu.kube.profile.TrialRecord;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BiFunction;
import org.junit.jupiter.api.Test;

class ProfileJobTest {

    private static final InstantSource CLOCK = InstantSource.fixed(Instant.parse("2026-11-24T00:00:00Z"));

    /** Runs trials on a model of the function and counts the pods it would have run. */
    static final class TestingRunner implements ProfileJob.Runner {
        final BiFunction<Integer, Integer, TrialPods.Outcome> model;
        final List<String> pods = new ArrayList<>();

        TestingRunner(BiFunction<Integer, Integer, TrialPods.Outcome> model) {
            this.model = model;
        }

        @Override
        public TrialPods.Outcome run(GpuFunctionProfile profile, int sm, int batch, int attempt) {
            pods.add(TrialPods.name(profile.getMetadata().getName(), sm, batch, attempt));
            return model.apply(sm, batch);
        }
    }

    /** Keeps every status written; refuses writes after {@code acceptWrites} of them (the spec changed). */
    static final class TestingWriter implements ProfileJob.StatusWriter {
        final List<ProfileStatus> written = new ArrayList<>();
        int acceptWrites = Integer.MAX_VALUE;

        @Override
        public boolean write(GpuFunctionProfile profile, ProfileStatus status) {
            if (written.size() >= acceptWrites) {
                return false;
            }
            written.add(status);
            return true;
        }

        ProfileStatus last() {
            return written.getLast();
        }
    }

    /** Batch latency: 8 kernels of ceil(blocks/slots) waves of 1 ms, blocks growing with batch, slots with SM. */
    static TrialPods.Outcome model(int sm, int batch) {
        int slots = (int) Math.ceil(sm * 1.08);
        int blocks = 40 + 20 * batch;
        double latency = 8 * Math.ceil((double) blocks / slots) * 0.001;
        return new TrialPods.Measured(new TrialReport(latency, batch / latency, 1000 + 100L * batch), "gpu-1");
    }

    private static GpuFunctionProfile inference(int sloMillis) {
        return TrialPodsTest.profile("bert", ProfileSpec.toProfile("bert", "inference", "img:1", null, sloMillis, null));
    }

    private static ProfileJob job(GpuFunctionProfile p, TestingRunner runner, TestingWriter writer) {
        return new ProfileJob(p, runner, writer, node -> "Emulated A100 on " + node, 2, 40_960, CLOCK);
    }

    @Test
    void anInferenceProfileBecomesReadyWithItsTrialsInTheStatus() throws Exception {
        TestingRunner runner = new TestingRunner(ProfileJobTest::model);
        TestingWriter writer = new TestingWriter();
        job(inference(100), runner, writer).run();
        ProfileStatus s = writer.last();
        GpuFunctionProfile done = new GpuFunctionProfile(inference(100).getMetadata(), inference(100).getSpec(), s);
        assertThat(done.conditionTrue(GpuFunctionProfile.READY)).isTrue();
        assertThat(done.conditionTrue(GpuFunctionProfile.PROFILING)).isFalse();
        assertThat(s.trials()).hasSize(runner.pods.size()).hasSize(s.searchTrials());
        // The chosen setting meets half the SLO and is the most efficient of the trials that do.
        TrialRecord chosen = s.trials().stream().filter(t -> t.smPercent().equals(s.smRequest()) && t.batchSize().equals(s.batchSize()))
                .findFirst().orElseThrow();
        assertThat(chosen.latencyMillis()).isLessThanOrEqualTo(50);
        double te = s.batchSize() / (chosen.latencyMillis() * s.smRequest());
        assertThat(s.trials()).filteredOn(t -> t.latencyMillis() <= 50)
                .allSatisfy(t -> assertThat(t.batchSize() / (t.latencyMillis() * t.smPercent())).isLessThanOrEqualTo(te));
        assertThat(s.memoryMiB()).isEqualTo(chosen.memoryMiB());
        assertThat(s.servingThroughputRps()).isEqualTo(chosen.throughput());
        // One trial at the limit and the chosen batch, recorded like the others: the rate vertical scaling reaches.
        assertThat(s.smLimit()).isEqualTo(Math.min(100, 2 * s.smRequest()));
        TrialRecord atLimit = s.trials().stream().filter(t -> t.smPercent().equals(s.smLimit()) && t.batchSize().equals(s.batchSize()))
                .findFirst().orElseThrow();
        assertThat(s.servingThroughputRpsAtLimit()).isCloseTo(atLimit.throughput(), org.assertj.core.data.Offset.offset(1e-9))
                .isGreaterThan(s.servingThroughputRps());
        assertThat(done.settings().orElseThrow().servingThroughputRpsAtLimit()).contains(s.servingThroughputRpsAtLimit());
        assertThat(chosen.gpu()).isEqualTo("Emulated A100 on gpu-1");
        // Every trial's status was written as it ended: one write to start, one per trial, one to finish.
        assertThat(writer.written).hasSize(s.trials().size() + 2);
        assertThat(done.settings()).isPresent();
    }

    @Test
    void aRestartedProfilerResumesFromTheTrialsInTheStatus() throws Exception {
        TestingRunner first = new TestingRunner(ProfileJobTest::model);
        TestingWriter writer = new TestingWriter();
        writer.acceptWrites = 4; // the leader is lost after three trials
        job(inference(100), first, writer).run();
        assertThat(first.pods).hasSize(4);
        GpuFunctionProfile resumed = new GpuFunctionProfile(inference(100).getMetadata(), inference(100).getSpec(), writer.last());
        assertThat(ProfileJob.needsWork(resumed)).isTrue();
        TestingRunner second = new TestingRunner(ProfileJobTest::model);
        TestingWriter after = new TestingWriter();
        job(resumed, second, after).run();
        TestingRunner fresh = new TestingRunner(ProfileJobTest::model);
        job(inference(100), fresh, new TestingWriter()).run();
        assertThat(second.pods).as("no setting run twice").doesNotContainAnyElementsOf(first.pods.subList(0, 3));
        assertThat(second.pods.size() + 3).isEqualTo(fresh.pods.size());
        assertThat(after.last().smRequest()).isNotNull();
        assertThat(ProfileJob.needsWork(new GpuFunctionProfile(inference(100).getMetadata(), inference(100).getSpec(), after.last())))
                .isFalse();
    }

    /** The profiler's way: one trial per job, each job replaying the search from the status the last one wrote. */
    @Test
    void jobsOfOneTrialEachReachWhatOneJobReachesWithOneWritePerTrial() throws Exception {
        TestingRunner whole = new TestingRunner(ProfileJobTest::model);
        TestingWriter wholeWriter = new TestingWriter();
        job(inference(100), whole, wholeWriter).run();

        TestingRunner steps = new TestingRunner(ProfileJobTest::model);
        TestingWriter writer = new TestingWriter();
        GpuFunctionProfile p = inference(100);
        int jobs = 0;
        boolean done = false;
        while (!done) {
            int before = steps.pods.size();
            done = new ProfileJob(p, steps, writer, node -> "Emulated A100 on " + node, 2, 40_960, CLOCK, 1).run();
            assertThat(steps.pods.size() - before).as("one trial per job").isLessThanOrEqualTo(1);
            p = new GpuFunctionProfile(p.getMetadata(), p.getSpec(), writer.last());
            jobs++;
        }
        assertThat(steps.pods).isEqualTo(whole.pods);
        assertThat(jobs).as("the job of the last trial also ends the search").isEqualTo(whole.pods.size());
        assertThat(writer.last()).isEqualTo(wholeWriter.last());
        assertThat(writer.written).as("a job that continues the search writes no second 'starting'").hasSize(wholeWriter.written.size());
    }

    @Test
    void anImageThatDoesNotPullFailsTheProfileAtOnceWithTheReason() throws Exception {
        TestingRunner runner = new TestingRunner((sm, b) -> new TrialPods.Fatal("ErrImagePull: pull access denied for nope"));
        TestingWriter writer = new TestingWriter();
        job(inference(100), runner, writer).run();
        assertThat(runner.pods).hasSize(1);
        var failed = writer.last().conditions().stream().filter(c -> c.getType().equals(GpuFunctionProfile.FAILED)).findFirst().orElseThrow();
        assertThat(failed.getStatus()).isEqualTo("True");
        assertThat(failed.getReason()).isEqualTo("TrialFailed");
        assertThat(failed.getMessage()).isEqualTo("SM 10% batch 1: ErrImagePull: pull access denied for nope");
        assertThat(writer.last().smRequest()).isNull();
    }

    @Test
    void aFailingPodIsRetriedAndThenFailsTheProfileIfNothingEverRan() throws Exception {
        TestingRunner runner = new TestingRunner((sm, b) -> new TrialPods.Retry("exit code 1"));
        TestingWriter writer = new TestingWriter();
        job(inference(100), runner, writer).run();
        assertThat(runner.pods).containsExactly("bert-sm10-b1-0", "bert-sm10-b1-1", "bert-sm10-b1-2");
        assertThat(writer.last().conditions()).anySatisfy(c -> {
            assertThat(c.getType()).isEqualTo(GpuFunctionProfile.FAILED);
            assertThat(c.getMessage()).isEqualTo("SM 10% batch 1 failed 3 times; last: exit code 1");
        });
    }

    @Test
    void aSettingThatFailsAfterOthersRanMissesTheSloAndTheSearchGoesOn() throws Exception {
        // Batches above 8 run out of memory.
        TestingRunner runner = new TestingRunner((sm, b) -> b > 8 ? new TrialPods.Retry("exit code 137 (OOMKilled)") : model(sm, b));
        TestingWriter writer = new TestingWriter();
        job(inference(400), runner, writer).run();
        ProfileStatus s = writer.last();
        assertThat(s.batchSize()).isLessThanOrEqualTo(8);
        assertThat(s.trials()).anySatisfy(t -> {
            assertThat(t.batchSize()).isGreaterThan(8);
            assertThat(t.latencyMillis()).isNull();
            assertThat(t.error()).contains("OOMKilled");
        });
    }

    @Test
    void aBrokenSpecFailsNamingTheField() throws Exception {
        TestingWriter writer = new TestingWriter();
        job(TrialPodsTest.profile("x", ProfileSpec.toProfile("x", "inference", "img:1", null, null, null)),
                new TestingRunner(ProfileJobTest::model), writer).run();
        assertThat(writer.last().conditions()).anySatisfy(c -> {
            assertThat(c.getReason()).isEqualTo("InvalidSpec");
            assertThat(c.getMessage()).startsWith("spec.sloMillis must be 1..3600000");
        });
        TestingWriter noImage = new TestingWriter();
        job(TrialPodsTest.profile("x", ProfileSpec.toProfile("x", "training", null, null, null, null)),
                new TestingRunner(ProfileJobTest::model), noImage).run();
        assertThat(noImage.last().conditions()).anySatisfy(c -> assertThat(c.getMessage()).startsWith("spec.image must name"));
    }

    @Test
    void aTrainingJobGetsItsRequestAndLimitByBinarySearch() throws Exception {
        // Throughput saturates at 60% SM (Amdahl-like): iterations per second = min(sm, 60) / 60 * 10.
        TestingRunner runner = new TestingRunner((sm, b) -> new TrialPods.Measured(
                new TrialReport(0.1 * 60 / Math.min(sm, 60), Math.min(sm, 60) / 6.0, 5000), "gpu-1"));
        TestingWriter writer = new TestingWriter();
        job(TrialPodsTest.profile("train", ProfileSpec.toProfile("train", "training", "img:1", null, null, null)), runner, writer).run();
        ProfileStatus s = writer.last();
        assertThat(s.smRequest()).isBetween(47, 49); // 80% of 10/s at 48%
        assertThat(s.smLimit()).isBetween(59, 60);
        assertThat(s.batchSize()).isEqualTo(1);
        assertThat(s.memoryMiB()).isEqualTo(5000);
        assertThat(s.searchTrials()).isLessThanOrEqualTo(14);
        assertThat(s.servingThroughputRps()).as("a training job is not served").isNull();
        assertThat(s.servingThroughputRpsAtLimit()).isNull();
    }

    @Test
    void aTrialAtTheLimitThatFailsLeavesTheRateThereUnknownAndTheProfileReady() throws Exception {
        TestingWriter first = new TestingWriter();
        job(inference(100), new TestingRunner(ProfileJobTest::model), first).run();
        int limit = first.last().smLimit();
        int batch = first.last().batchSize();
        TestingRunner runner = new TestingRunner((sm, b) -> sm == limit && b == batch ? new TrialPods.Retry("exit code 1")
                : model(sm, b));
        TestingWriter writer = new TestingWriter();
        job(inference(100), runner, writer).run();
        ProfileStatus s = writer.last();
        assertThat(s.smRequest()).isEqualTo(first.last().smRequest());
        assertThat(s.servingThroughputRps()).isEqualTo(first.last().servingThroughputRps());
        assertThat(s.servingThroughputRpsAtLimit()).isNull();
        assertThat(s.trials().getLast().error()).startsWith("SM " + limit + "% batch " + batch + " failed 3 times");
        assertThat(s.searchTrials()).isEqualTo(first.last().searchTrials());
    }

    @Test
    void aWorkloadThatDoesNotSayItsMemoryKeepsWhatItWasMeasuredWith() throws Exception {
        TestingRunner runner = new TestingRunner((sm, b) -> {
            TrialReport r = ((TrialPods.Measured) model(sm, b)).report();
            return new TrialPods.Measured(new TrialReport(r.latencySeconds(), r.throughput(), 0), "gpu-1");
        });
        TestingWriter writer = new TestingWriter();
        job(inference(100), runner, writer).run();
        assertThat(writer.last().memoryMiB()).isEqualTo(40_960);
    }
}
