package io.dilu.core.scaling;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dilu.core.scaling.KeepAlive.Decision;
import io.dilu.core.scaling.KeepAlive.Parameters;
import io.dilu.core.scaling.KeepAlive.Pattern;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.LongRange;
import net.jqwik.api.constraints.Size;
import org.junit.jupiter.api.Test;

class KeepAliveTest {

    static final Instant T0 = Instant.parse("2026-11-22T10:00:00Z");
    static final Duration COLD_START = Duration.ofSeconds(8); // the simulator's mid-size model
    static final KeepAlive OURS = new KeepAlive(Parameters.DEFAULTS);
    static final KeepAlive PAPER = new KeepAlive(Parameters.PAPER);

    static GapHistogram gaps(KeepAlive policy, int n, Duration gap) {
        GapHistogram h = policy.emptyHistogram();
        for (int i = 0; i < n; i++) {
            h = h.record(gap);
        }
        return h;
    }

    static GapHistogram gaps(KeepAlive policy, long... seconds) {
        GapHistogram h = policy.emptyHistogram();
        for (long s : seconds) {
            h = h.record(Duration.ofSeconds(s));
        }
        return h;
    }

    @Test
    void periodicThreeMinuteGapsPrewarmBeforeTheReturnAndKeepBoundedPastIt() {
        Decision d = OURS.decide(gaps(OURS, 30, Duration.ofMinutes(3)), T0, COLD_START);
        assertThat(d).isInstanceOf(Decision.Predicted.class);
        Decision.Predicted p = (Decision.Predicted) d;
        assertThat(p.pattern().head()).isEqualTo(Duration.ofSeconds(180));
        assertThat(p.pattern().tail()).isEqualTo(Duration.ofSeconds(190));
        assertThat(p.unloads()).isTrue();
        assertThat(p.releaseAt()).as("goes at once").isEqualTo(T0);
        assertThat(p.prewarmAt()).as("ready at 0.9 × 180 s, a cold start earlier").isEqualTo(T0.plusSeconds(162 - 8));
        assertThat(p.keepUntil()).as("1.1 × the 190 s bin edge").isEqualTo(T0.plusSeconds(209));
        assertThat(d.warm(T0.plusSeconds(1))).isFalse();
        assertThat(d.warm(T0.plusSeconds(153))).isFalse();
        assertThat(d.warm(T0.plusSeconds(154))).isTrue();
        assertThat(d.warm(T0.plusSeconds(180))).as("warm when the function is due").isTrue();
        assertThat(d.warm(T0.plusSeconds(209))).as("and not forever").isFalse();

        Decision.Predicted paper = (Decision.Predicted) PAPER.decide(gaps(PAPER, 30, Duration.ofMinutes(3)), T0, COLD_START);
        assertThat(paper.prewarmAt()).isEqualTo(T0.plusSeconds(154));
        assertThat(paper.keepUntil()).as("the paper's 1-minute bin: 1.1 × 240 s").isEqualTo(T0.plusSeconds(264));
    }

    @Test
    void tooFewIdleTimesFallBackToTheFixedKeepAlive() {
        Decision d = OURS.decide(gaps(OURS, 19, Duration.ofMinutes(3)), T0, COLD_START);
        assertThat(d).isInstanceOf(Decision.Fixed.class);
        Decision.Fixed f = (Decision.Fixed) d;
        assertThat(f.pattern().reason()).isEqualTo(Pattern.Reason.TOO_FEW_SAMPLES);
        assertThat(f.pattern().why()).contains("19 idle times");
        assertThat(f.keepUntil()).isEqualTo(T0.plus(KeepAlive.FIXED_KEEP_ALIVE));
        assertThat(d.warm(T0.plusSeconds(599))).isTrue();
        assertThat(d.warm(T0.plusSeconds(600))).isFalse();
        assertThat(((Decision.Fixed) PAPER.decide(PAPER.emptyHistogram(), T0, COLD_START)).keepUntil())
                .as("the paper keeps it for the histogram's range").isEqualTo(T0.plus(Duration.ofHours(4)));
        assertThat(OURS.decide(gaps(OURS, 20, Duration.ofMinutes(3)), T0, COLD_START)).isInstanceOf(Decision.Predicted.class);
    }

    @Test
    void idleTimesMostlyBeyondTheRangeFallBack() {
        GapHistogram fiveHours = gaps(OURS, 30, Duration.ofHours(5));
        assertThat(fiveHours.outOfRange()).isEqualTo(30);
        Decision d = OURS.decide(fiveHours, T0, COLD_START);
        assertThat(((Decision.Fixed) d).pattern().reason()).isEqualTo(Pattern.Reason.OUT_OF_RANGE);
        assertThat(OURS.decide(fiveHours.record(Duration.ofHours(4)), T0, COLD_START)).as("4 h is already out")
                .isInstanceOf(Decision.Fixed.class);

        // Up to half beyond the range: the pattern of the rest is used (one long pause a night does not undo it).
        GapHistogram h = gaps(OURS, 30, Duration.ofMinutes(3));
        for (int i = 0; i < 30; i++) {
            h = h.record(Duration.ofHours(6));
        }
        assertThat(OURS.decide(h, T0, COLD_START)).isInstanceOf(Decision.Predicted.class);
        assertThat(OURS.decide(h.record(Duration.ofHours(6)), T0, COLD_START)).isInstanceOf(Decision.Fixed.class);
    }

    @Test
    void idleTimesSpreadEvenlyOverTheRangeAreNoPattern() {
        GapHistogram h = OURS.emptyHistogram();
        for (int s = 30; s < 4 * 3600; s += 30) {
            h = h.record(Duration.ofSeconds(s)); // two in every minute: a flat histogram
        }
        Pattern p = OURS.pattern(h);
        assertThat(p).isInstanceOf(Pattern.Unknown.class);
        assertThat(((Pattern.Unknown) p).reason()).isEqualTo(Pattern.Reason.NOT_REPRESENTATIVE);
        assertThat(OURS.decide(h, T0, COLD_START)).isInstanceOf(Decision.Fixed.class);
    }

    @Test
    void aFunctionBackWithinItsColdStartIsNotUnloaded() {
        Decision.Predicted frequent = (Decision.Predicted) OURS.decide(gaps(OURS, 40, Duration.ofSeconds(5)), T0, COLD_START);
        assertThat(frequent.pattern().head()).as("the head is bin 0, as in the paper").isEqualTo(Duration.ZERO);
        assertThat(frequent.unloads()).isFalse();
        assertThat(frequent.warm(T0.plusSeconds(1))).isTrue();
        assertThat(frequent.keepUntil()).isEqualTo(T0.plusSeconds(11));

        // A minute's idle time with a 60 s cold start: pre-warming would have to start at once, so it stays.
        Decision.Predicted slow = (Decision.Predicted) OURS.decide(gaps(OURS, 40, Duration.ofMinutes(1)), T0,
                Duration.ofSeconds(60));
        assertThat(slow.unloads()).isFalse();
        assertThat(slow.warm(T0.plusSeconds(30))).isTrue();
    }

    /** Plays a per-second rate through a tracker and a histogram, as an autoscaler would; returns both. */
    record Learnt(GapTracker tracker, GapHistogram histogram) {}

    static Learnt play(KeepAlive policy, double[] rates, double threshold, Duration minGap) {
        GapTracker tracker = new GapTracker(minGap);
        GapHistogram h = policy.emptyHistogram();
        for (int s = 0; s < rates.length; s++) {
            Optional<Duration> gap = tracker.observe(T0.plusSeconds(s), rates[s], threshold);
            if (gap.isPresent()) {
                h = h.record(gap.get());
            }
        }
        return new Learnt(tracker, h);
    }

    @Test
    void theLastInstanceGoesToZeroAndIsPrewarmedBeforeTheExpectedReturn() {
        // Sporadic: 20 s of requests every 3 minutes for two hours, then it goes quiet after its last spell.
        int period = 180;
        double[] rates = new double[40 * period + 20];
        for (int s = 0; s < rates.length; s++) {
            rates[s] = s % period < 20 ? 5 : 0;
        }
        Learnt l = play(OURS, rates, 0, Duration.ofSeconds(40));
        assertThat(l.histogram().samples()).isEqualTo(40);
        assertThat(l.tracker().idleSince()).as("the spell is on at its last second").isEmpty();
        Instant end = T0.plusSeconds(rates.length - 1);
        assertThat(l.tracker().observe(end.plusSeconds(1), false)).isEmpty();
        assertThat(l.tracker().idleSince()).contains(end);

        Decision d = OURS.decide(l.histogram(), end, COLD_START);
        Instant due = end.plusSeconds(period - 19); // 20 on-seconds: the next spell starts 161 s after the last on
        int warmFrom = -1;
        for (int s = 1; s <= period; s++) {
            if (d.warm(end.plusSeconds(s)) && warmFrom < 0) {
                warmFrom = s;
            }
        }
        assertThat(d.warm(end.plusSeconds(1))).as("down to zero").isFalse();
        assertThat(warmFrom).as("back before it is due").isPositive();
        assertThat(end.plusSeconds(warmFrom).plus(COLD_START)).isBefore(due);
        assertThat(d.warm(due)).isTrue();
        assertThat(d.warm(due.plusSeconds(60))).as("gone again when the function did not come").isFalse();
    }

    @Test
    void anExtraInstanceForBurstsIsReleasedAfterOneAndPrewarmedBeforeTheNext() {
        // A base of 30 rps that one instance serves, with 15-s bursts to 200 rps every 2 minutes.
        int period = 120;
        double[] rates = new double[60 * period + 15];
        for (int s = 0; s < rates.length; s++) {
            rates[s] = s % period < 15 ? 200 : 30;
        }
        Learnt l = play(OURS, rates, 50, Duration.ofSeconds(5));
        assertThat(l.histogram().samples()).isEqualTo(60);
        Instant burstEnd = T0.plusSeconds(rates.length - 1);
        l.tracker().observe(burstEnd.plusSeconds(1), 30, 50);
        Decision.Predicted d = (Decision.Predicted) OURS.decide(l.histogram(), l.tracker().idleSince().orElseThrow(), COLD_START);
        Instant nextBurst = burstEnd.plusSeconds(period - 14);
        assertThat(d.unloads()).isTrue();
        assertThat(d.warm(burstEnd.plusSeconds(1))).as("released between bursts").isFalse();
        assertThat(d.prewarmAt().plus(COLD_START)).as("ready before the next").isBefore(nextBurst);
        assertThat(d.keepUntil()).isAfter(nextBurst);
    }

    @Test
    void theTrackerCountsGapsBetweenActivitiesOnly() {
        GapTracker t = new GapTracker(Duration.ofSeconds(10));
        assertThat(t.observe(T0, false)).isEmpty();
        assertThat(t.idleSince()).as("nothing seen yet").isEmpty();
        assertThat(t.observe(T0.plusSeconds(1), true)).isEmpty();
        assertThat(t.observe(T0.plusSeconds(30), true)).as("missed seconds are absent, not idle").isEmpty();
        assertThat(t.observe(T0.plusSeconds(31), false)).isEmpty();
        assertThat(t.observe(T0.plusSeconds(35), true)).as("shorter than minGap: part of the activity").isEmpty();
        assertThat(t.observe(T0.plusSeconds(36), false)).isEmpty();
        assertThat(t.idleSince()).contains(T0.plusSeconds(35));
        assertThat(t.observe(T0.plusSeconds(95), true)).contains(Duration.ofSeconds(60));
        assertThat(t.idleSince()).isEmpty();
        assertThatThrownBy(() -> t.observe(T0, true)).hasMessageContaining("back in time");
        assertThatThrownBy(() -> t.observe(T0.plusSeconds(100), -1, 50)).hasMessageContaining("rps");
        assertThatThrownBy(() -> new GapTracker(Duration.ofSeconds(-1))).hasMessageContaining("minGap");
    }

    @Test
    void theHistogramIsAShortLineAndComesBackFromIt() {
        GapHistogram h = gaps(OURS, 175, 181, 183, 14_500).record(T0, T0.plusSeconds(20));
        String line = h.encode();
        assertThat(line).isEqualTo("bin=PT10S range=PT4H out=1 counts=2:1,17:1,18:2");
        assertThat(GapHistogram.decode(line)).isEqualTo(h);
        int[] counts = h.counts();
        assertThat(GapHistogram.of(h.bin(), counts, h.outOfRange())).isEqualTo(h);
        assertThat(GapHistogram.decode(OURS.emptyHistogram().encode())).isEqualTo(OURS.emptyHistogram());
        assertThatThrownBy(() -> GapHistogram.decode("bin=PT10S")).hasMessageContaining("a histogram must read");
        assertThatThrownBy(() -> GapHistogram.decode("bin=10s range=PT4H out=0 counts=")).hasMessageContaining("bin must be an ISO-8601");
        assertThatThrownBy(() -> GapHistogram.decode("bin=PT7S range=PT4H out=0 counts=")).hasMessageContaining("divide a minute");
        assertThatThrownBy(() -> GapHistogram.decode("bin=PT10S range=PT4H out=0 counts=1440:1"))
                .hasMessageContaining("counts index must be an integer in 0..1439");
        assertThatThrownBy(() -> GapHistogram.decode("bin=PT10S range=PT4H out=-1 counts=")).hasMessageContaining("out must be");
        assertThatThrownBy(() -> h.record(T0.plusSeconds(1), T0)).hasMessageContaining("must not be before");
        assertThatThrownBy(() -> PAPER.pattern(h)).hasMessageContaining("bin PT10S");
    }

    @Test
    void parametersOutOfRangeAreRefusedNamingTheField() {
        Parameters d = Parameters.DEFAULTS;
        assertThatThrownBy(() -> new Parameters(Duration.ofSeconds(7), d.range(), 0.05, 0.99, 0.1, 2, 20, 0.5, d.fallbackKeepAlive()))
                .hasMessageContaining("bin must be > 0 and divide a minute");
        assertThatThrownBy(() -> new Parameters(d.bin(), Duration.ofSeconds(90), 0.05, 0.99, 0.1, 2, 20, 0.5, d.fallbackKeepAlive()))
                .hasMessageContaining("range must be a positive whole number of minutes");
        assertThatThrownBy(() -> new Parameters(d.bin(), d.range(), 0.5, 0.4, 0.1, 2, 20, 0.5, d.fallbackKeepAlive()))
                .hasMessageContaining("tailPercentile must be in [headPercentile, 1]");
        assertThatThrownBy(() -> new Parameters(d.bin(), d.range(), 0.05, 0.99, 1, 2, 20, 0.5, d.fallbackKeepAlive()))
                .hasMessageContaining("margin must be in [0, 1)");
        assertThatThrownBy(() -> new Parameters(d.bin(), d.range(), 0.05, 0.99, 0.1, 2, 20, 1, d.fallbackKeepAlive()))
                .hasMessageContaining("maxOutOfRange must be in [0, 1)");
        assertThatThrownBy(() -> OURS.decide(OURS.emptyHistogram(), T0, Duration.ofSeconds(-1))).hasMessageContaining("warmup");
    }

    @Property(tries = 300)
    void aRegularGapIsCoveredAndTheWindowStaysNearIt(
            @ForAll @LongRange(min = 120, max = 3 * 3600) long gapSeconds,
            @ForAll @IntRange(min = 20, max = 200) int n,
            @ForAll @IntRange(min = 0, max = 30) int coldStart) {
        for (KeepAlive policy : List.of(OURS, PAPER)) {
            Duration gap = Duration.ofSeconds(gapSeconds);
            Decision.Predicted d = (Decision.Predicted) policy.decide(gaps(policy, n, gap), T0, Duration.ofSeconds(coldStart));
            Instant due = T0.plus(gap);
            assertThat(d.unloads()).isTrue();
            assertThat(d.prewarmAt().plusSeconds(coldStart)).as("ready by the return").isBeforeOrEqualTo(due);
            assertThat(d.warm(due)).isTrue();
            Duration bin = policy.parameters().bin();
            assertThat(Duration.between(T0, d.keepUntil()))
                    .as("kept at most the margin past the return's bin")
                    .isLessThanOrEqualTo(Duration.ofMillis(Math.round((gap.toMillis() + bin.toMillis()) * 1.1)));
        }
    }

    @Property(tries = 300)
    void theFinerBinTrustsExactlyWhatThePaperTrustsAndCutsInsideItsWindow(
            @ForAll @Size(min = 0, max = 120) List<@LongRange(min = 0, max = 5 * 3600) Long> idle,
            @ForAll @IntRange(min = 0, max = 3) int periodic) {
        List<Long> seconds = new ArrayList<>(idle);
        for (int i = 0; i < periodic * 10; i++) {
            seconds.add(170L + i % 20); // some of them repeat, so both outcomes occur
        }
        long[] s = seconds.stream().mapToLong(Long::longValue).toArray();
        Pattern fine = OURS.pattern(gaps(OURS, s));
        Pattern paper = PAPER.pattern(gaps(PAPER, s));
        assertThat(fine.getClass()).isEqualTo(paper.getClass());
        if (fine instanceof Pattern.Unknown u) {
            assertThat(u.reason()).isEqualTo(((Pattern.Unknown) paper).reason());
        } else {
            Pattern.Learned f = (Pattern.Learned) fine;
            Pattern.Learned p = (Pattern.Learned) paper;
            assertThat(f.cv()).isEqualTo(p.cv());
            assertThat(f.head()).isGreaterThanOrEqualTo(p.head());
            assertThat(f.tail()).isLessThanOrEqualTo(p.tail());
        }
    }

    @Property(tries = 200)
    void anyHistogramGivesAnOrderedTimelineAndSurvivesItsLine(@ForAll long seed) {
        Random r = new Random(seed);
        GapHistogram h = OURS.emptyHistogram();
        int n = r.nextInt(200);
        for (int i = 0; i < n; i++) {
            h = h.record(Duration.ofSeconds(r.nextInt(r.nextBoolean() ? 600 : 6 * 3600)));
        }
        assertThat(GapHistogram.decode(h.encode())).isEqualTo(h);
        Decision d = OURS.decide(h, T0, Duration.ofSeconds(r.nextInt(60)));
        if (d instanceof Decision.Predicted p) {
            assertThat(p.releaseAt()).isAfterOrEqualTo(T0).isBeforeOrEqualTo(p.prewarmAt());
            assertThat(p.prewarmAt()).isBeforeOrEqualTo(p.keepUntil());
            assertThat(p.keepUntil()).isAfter(T0);
        } else {
            assertThat(((Decision.Fixed) d).keepUntil()).isEqualTo(T0.plus(KeepAlive.FIXED_KEEP_ALIVE));
        }
        assertThat(d.warm(T0.plus(Duration.ofHours(5)))).as("nothing is kept past 1.1 × the range").isFalse();
    }
}
