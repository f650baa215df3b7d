package io.dilu.extender.state;

import java.util.Optional;

/**
 * What the extender writes on a pod after the book has placed it ({@link Standing}): a pure function of
 * the standing and what the pod already says, so that a pod in line costs no API call and a repeated watch event
 * asks for nothing new.
 *
 * @param servingTrue set the pod's {@code dilu.io/serving} condition True: its SM request is booked and it declares the
 *     readiness gate, whose condition is not True yet (a wake, or a bind whose status write was lost)
 * @param woken remove {@code dilu.io/wake}: the wake is answered by the booking
 * @param wakeFailed write {@code dilu.io/wake-failed} with this reason and remove {@code dilu.io/wake}
 */
public record ParkingAnswer(boolean servingTrue, boolean woken, Optional<String> wakeFailed) {

    public static final ParkingAnswer NOTHING = new ParkingAnswer(false, false, Optional.empty());

    /**
     * @param wakeAnnotated the pod carries {@code dilu.io/wake}
     * @param wakeFailedAnnotated the pod carries {@code dilu.io/wake-failed}
     * @param servingGate the pod declares a readiness gate on {@code dilu.io/serving}
     * @param servingTrue its {@code dilu.io/serving} condition is True
     */
    public static ParkingAnswer of(Standing standing, boolean wakeAnnotated, boolean wakeFailedAnnotated,
            boolean servingGate, boolean servingTrue) {
        return switch (standing.kind()) {
            case SERVING -> new ParkingAnswer(servingGate && !servingTrue, wakeAnnotated, Optional.empty());
            // A parked pod's condition is the autoscaler's (false, or true for the last instance left in the path).
            case PARKED -> wakeFailedAnnotated ? NOTHING
                    : new ParkingAnswer(false, false, standing.wakeRefusal());
            case NONE -> NOTHING;
        };
    }

    public boolean any() {
        return servingTrue || woken || wakeFailed.isPresent();
    }
}
