package io.dilu.core.scaling;

import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

/**
 * Turns an autoscaler's per-tick observations into the gaps the histogram learns from: a gap runs from the last
 * observation that was on (a request, or a rate above the burst threshold) to the next one, provided an
 * observation in between was off — a missed observation is absent, not off, as in {@link RateWindow}. Gaps shorter
 * than {@code minGap} are part of the activity (a stream with one-second holes is one activity, which no scaler
 * could release an instance in) and are not reported. Explicitly owned mutable state, one per function and use; what
 * the keep-alive decision reads of it ({@link State}) can be taken out and put back, so that a new leader continues.
 */
public final class GapTracker {

    private final Duration minGap;
    private Instant lastOn;
    private Instant lastSeen;
    private boolean offSince;

    /**
     * What the tracker knows that the next gap and the keep-alive decision depend on: the last observation that was on,
     * and whether one that was off has come since (then the function is idle since {@code lastOn}). The time of the
     * last observation is left out: it only refuses observations that go back in time, and a new leader's clock may
     * stand a little behind the old one's.
     */
    public record State(Optional<Instant> lastOn, boolean off) {

        /** A tracker that has seen nothing. */
        public static final State EMPTY = new State(Optional.empty(), false);

        public State {
            if (lastOn == null || (off && lastOn.isEmpty())) {
                throw new IllegalArgumentException("off needs a lastOn to be idle since, got lastOn " + lastOn);
            }
        }
    }

    public GapTracker(Duration minGap) {
        this(minGap, State.EMPTY);
    }

    /** A tracker that goes on from {@code state}, as {@link #state()} gave it. */
    public GapTracker(Duration minGap, State state) {
        if (minGap == null || minGap.isNegative()) {
            throw new IllegalArgumentException("minGap must be >= 0, got " + minGap);
        }
        this.minGap = minGap;
        this.lastOn = state.lastOn().orElse(null);
        this.offSince = state.off();
    }

    /** What the tracker knows now, to go on from later ({@link #GapTracker(Duration, State)}). */
    public State state() {
        return new State(Optional.ofNullable(lastOn), offSince);
    }

    /** Records one observation; returns the gap that ended with it, if it ended one at least {@code minGap} long. */
    public Optional<Duration> observe(Instant now, boolean on) {
        if (lastSeen != null && now.isBefore(lastSeen)) {
            throw new IllegalArgumentException("observations must not go back in time: " + now + " after " + lastSeen);
        }
        lastSeen = now;
        if (!on) {
            offSince = lastOn != null;
            return Optional.empty();
        }
        Optional<Duration> gap = Optional.empty();
        if (offSince) {
            Duration g = Duration.between(lastOn, now);
            gap = g.compareTo(minGap) >= 0 ? Optional.of(g) : Optional.empty();
        }
        lastOn = now;
        offSince = false;
        return gap;
    }

    /** For the gaps between bursts: on while the rate is above {@code threshold} (passed by the caller each tick). */
    public Optional<Duration> observe(Instant now, double rps, double threshold) {
        if (!(rps >= 0) || Double.isInfinite(rps)) {
            throw new IllegalArgumentException("rps must be finite and >= 0, got " + rps);
        }
        if (!(threshold >= 0) || Double.isInfinite(threshold)) {
            throw new IllegalArgumentException("threshold must be finite and >= 0, got " + threshold);
        }
        return observe(now, rps > threshold);
    }

    /** The last on observation, when off has been observed since: the {@code lastActive} to decide from. */
    public Optional<Instant> idleSince() {
        return offSince ? Optional.of(lastOn) : Optional.empty();
    }
}
