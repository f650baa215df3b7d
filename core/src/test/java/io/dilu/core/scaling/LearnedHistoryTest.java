package io.dilu.core.scaling;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.core.quota.FieldError;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.api.Test;

/** What a revision's scaler learned, taken out, written as text, read back (or refused) and taken up again. */
class LearnedHistoryTest {

    static final Instant T0 = Instant.parse("2026-11-28T10:00:00Z");
    static final Duration IDLE_MIN = Duration.ofSeconds(70);
    static final Duration BURST_MIN = Duration.ofSeconds(31);

    /** A history fed {@code cycles} spells of 3 s at 5 rps (a burst above 4), each followed by 80–82 s without a request. */
    static FunctionHistory learnedHistory(int cycles) {
        FunctionHistory h = new FunctionHistory(IDLE_MIN, BURST_MIN);
        Instant t = T0;
        for (int c = 0; c < cycles; c++) {
            for (int s = 0; s < 3; s++, t = t.plusSeconds(1)) {
                h.observe(t, 5, 4);
            }
            for (int s = 0; s < 80 + c % 3; s++, t = t.plusSeconds(1)) {
                h.observe(t, 0, 4);
            }
        }
        return h;
    }

    static LearnedHistory learned() {
        return new LearnedHistory(learnedHistory(25).snapshot(), Optional.of(T0.plusSeconds(3000)));
    }

    /** A time after {@link #learnedHistory(int)}'s 25 cycles. */
    static final Instant NOW = T0.plusSeconds(25 * 84);

    @Test
    void aStateReadBackIsTheStateWrittenAndWritesTheSameText() {
        LearnedHistory original = learned();
        String text = original.encode();
        List<FieldError> problems = new ArrayList<>();
        Optional<LearnedHistory> read = LearnedHistory.decode(text, NOW, problems);

        assertThat(problems).isEmpty();
        assertThat(read).contains(original);
        assertThat(read.orElseThrow().encode()).isEqualTo(text);
        assertThat(text.length()).as("compact: the bins that hold something").isLessThan(400);
        LearnedHistory empty = new LearnedHistory(FunctionHistory.Snapshot.empty(), Optional.empty());
        assertThat(LearnedHistory.decode(empty.encode(), NOW, problems)).contains(empty);
    }

    @Test
    void aRestoredHistoryKeepsReleasedInstancesUntilTheSameTimeAsTheOriginal() {
        FunctionHistory original = learnedHistory(25);
        FunctionHistory restored = new FunctionHistory(IDLE_MIN, BURST_MIN, LearnedHistory.decode(
                new LearnedHistory(original.snapshot(), Optional.empty()).encode(), NOW, new ArrayList<>())
                .orElseThrow().history());
        FunctionHistory fresh = new FunctionHistory(IDLE_MIN, BURST_MIN);

        for (boolean last : new boolean[] {true, false}) {
            assertThat(restored.keepReleasedUntil(NOW, last)).as("last %s", last).isEqualTo(original.keepReleasedUntil(NOW, last));
        }
        assertThat(original.keepReleasedUntil(NOW, true)).as("the pattern is learned: not the fixed keep-alive")
                .isNotEqualTo(fresh.keepReleasedUntil(NOW, true));
        assertThat(restored.summary()).isEqualTo(original.summary());
        // Both go on learning alike: another spell and another gap each.
        for (FunctionHistory h : List.of(original, restored)) {
            h.observe(NOW, 5, 4);
            h.observe(NOW.plusSeconds(1), 0, 4);
            h.observe(NOW.plusSeconds(200), 5, 4);
            h.observe(NOW.plusSeconds(201), 0, 4);
        }
        assertThat(restored.snapshot()).isEqualTo(original.snapshot());
        assertThat(restored.keepReleasedUntil(NOW.plusSeconds(300), true))
                .isEqualTo(original.keepReleasedUntil(NOW.plusSeconds(300), true));
    }

    /** Dilu's class with scale to zero: the last instance parks when a window passes without a request. */
    static final Knobs KNOBS = Knobs.lazy(Map.of(io.dilu.core.contract.KnativeNames.INITIAL_SCALE, "0"), KnativeAutoscalerConfig.DEFAULTS, 40,
            new InstanceRate(10, "test", Double.NaN), true, true, new ArrayList<>());

    /** 2 s at 5 rps then 80–82 s idle, repeated: the rate at second {@code t}. */
    static double rate(int t) {
        int cycle = 0;
        for (int start = 0;; cycle++) {
            int length = 2 + 80 + cycle % 3;
            if (t < start + length) {
                return t - start < 2 ? 5 : 0;
            }
            start += length;
        }
    }

    static Readings readings(RevisionScaler.Decision last, int t) {
        return new Readings(0, last.parked(), OptionalDouble.empty(), OptionalDouble.empty(), rate(t), 0);
    }

    @Test
    void aScalerTakingUpAnothersLearnedStateDecidesAsTheOneThatWentOnAndAFreshOneDoesNot() {
        RevisionScaler original = RevisionScaler.of(KNOBS.policy(), ScalingParameters.DEFAULTS, -1);
        RevisionScaler.Decision last = new RevisionScaler.Decision(0, 0, "none");
        int handover = 25 * 83 + 60; // idle, after the spell's last instance parked (40 s after its last request)
        for (int t = 0; t < handover; t++) {
            last = original.decide(readings(last, t), KNOBS, T0.plusSeconds(t));
        }
        assertThat(original.learned().orElseThrow().parkedUntil()).as("parked until the pattern says").isPresent();
        String stored = original.learned().orElseThrow().encode();
        Optional<LearnedHistory> read = LearnedHistory.decode(stored, T0.plusSeconds(handover), new ArrayList<>());
        RevisionScaler restored = RevisionScaler.of(KNOBS.policy(), ScalingParameters.DEFAULTS, original.desired(), read);
        RevisionScaler fresh = RevisionScaler.of(KNOBS.policy(), ScalingParameters.DEFAULTS, original.desired());
        assertThat(restored.learned()).as("before its first tick: what it was given").isEqualTo(read);

        boolean freshDiffered = false;
        RevisionScaler.Decision lastRestored = last;
        for (int t = handover; t < handover + 400; t++) {
            Readings r = readings(last, t);
            last = original.decide(r, KNOBS, T0.plusSeconds(t));
            lastRestored = restored.decide(r, KNOBS, T0.plusSeconds(t));
            RevisionScaler.Decision f = fresh.decide(r, KNOBS, T0.plusSeconds(t));
            assertThat(lastRestored).as("second %d", t).isEqualTo(last);
            assertThat(restored.learned()).as("second %d", t).isEqualTo(original.learned());
            freshDiffered |= !f.equals(last) || !fresh.learned().equals(original.learned());
        }
        assertThat(freshDiffered).as("a scaler that learned nothing decides otherwise: the test can fail").isTrue();
    }

    static Stream<Arguments> refused() {
        String good = learned().encode();
        String far = NOW.plus(LearnedHistory.CLOCK_SKEW).plus(LearnedHistory.LONGEST_KEEP).plusSeconds(1).toString();
        return Stream.of(
                Arguments.of("", "state"),
                Arguments.of("x".repeat(LearnedHistory.MAX_CHARS + 1), "state"),
                Arguments.of(good + "colour blue\n", "'colour'"),
                Arguments.of(good + line(good, "idle") + "\n", "idle"),
                Arguments.of(without(good, "bursts"), "bursts"),
                Arguments.of(good.replace("version 1", "version 2"), "version"),
                Arguments.of(replaceLine(good, "parked-until", "yesterday"), "parked-until"),
                Arguments.of(replaceLine(good, "parked-until", far), "parked-until"),
                Arguments.of(replaceLine(good, "parked-until", "1969-12-31T23:59:59Z"), "parked-until"),
                Arguments.of(replaceLine(good, "idle-tracker", "last-on=none off=true"), "idle-tracker"),
                Arguments.of(replaceLine(good, "idle-tracker", "last-on=" + NOW + " off=maybe"), "idle-tracker off"),
                Arguments.of(replaceLine(good, "idle-tracker", "last-on=" + NOW.plus(LearnedHistory.CLOCK_SKEW).plusSeconds(1)
                        + " off=true"), "idle-tracker last-on"),
                Arguments.of(replaceLine(good, "burst-tracker", "lastOn=" + NOW), "burst-tracker"),
                Arguments.of(replaceLine(good, "idle", "bin=PT1M range=PT4H out=0 counts=1:20"), "idle"),
                Arguments.of(replaceLine(good, "idle", "bin=PT10S range=PT4H out=0 counts=1440:1"), "idle"),
                Arguments.of(replaceLine(good, "bursts", "bin=PT10S range=PT4H out=0 counts=3:-1"), "bursts"),
                Arguments.of(replaceLine(good, "bursts", "bin=PT10S range=PT4H out=" + (LearnedHistory.MAX_OUT_OF_RANGE + 1)
                        + " counts="), "bursts out"),
                Arguments.of(replaceLine(good, "bursts", "garbage"), "bursts"),
                Arguments.of(replaceLine(good, "bursts", "bin=PT10S range=PT2562047788015216H out=0 counts="), "bursts"),
                Arguments.of(good.replace("\n", "\r\n"), "version"));
    }

    @ParameterizedTest
    @MethodSource("refused")
    void aCorruptStateIsRefusedWholeNamingTheFieldAndWhatIsAllowed(String text, String field) {
        assertThat(LearnedHistory.decode(learned().encode(), NOW, new ArrayList<>())).as("the good state reads").isPresent();
        List<FieldError> problems = new ArrayList<>();

        assertThat(LearnedHistory.decode(text, NOW, problems)).isEmpty();
        assertThat(problems).extracting(FieldError::field).containsExactly(field);
        assertThat(problems.getFirst().message()).contains(" is not allowed: must be ");
        assertThat(problems.getFirst().allowed()).isNotBlank();
    }

    static String line(String text, String key) {
        return text.lines().filter(l -> l.startsWith(key + " ")).findFirst().orElseThrow();
    }

    static String replaceLine(String text, String key, String value) {
        return text.replace(line(text, key), key + " " + value);
    }

    static String without(String text, String key) {
        return text.replace(line(text, key) + "\n", "");
    }
}
