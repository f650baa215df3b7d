package io.dilu.core.placement;

import java.util.List;

/** The answer of a {@link PlacementPolicy}: where, or why not. Never an exception for a full cluster. */
public sealed interface PlacementDecision {

    /** The instance goes on these GPUs, all on one node; more slots than asked GPUs means pipeline stages. */
    record Placed(String node, List<Slot> slots) implements PlacementDecision {
        public Placed {
            slots = List.copyOf(slots);
        }
    }

    /** No GPU can take the instance now; {@code reason} is written for the user who asked. */
    record Infeasible(String reason) implements PlacementDecision {}
}
