package io.dilu.extender.state;

import java.util.Optional;

/**
 * Where a pod stands in the {@link PlacementBook} after an observation.
 *
 * @param kind not booked, booked in full (its SM request held: it may serve), or at its memory alone
 * @param wakeRefusal a parked pod's refused wake, with why: to be written as {@code dilu.io/wake-failed}
 * @param wakeDecided this observation decided a wake (woken or refused), for counting
 */
public record Standing(Kind kind, Optional<String> wakeRefusal, boolean wakeDecided) {

    public enum Kind { NONE, SERVING, PARKED }

    static final Standing NONE = new Standing(Kind.NONE, Optional.empty(), false);
    static final Standing SERVING = new Standing(Kind.SERVING, Optional.empty(), false);
}
