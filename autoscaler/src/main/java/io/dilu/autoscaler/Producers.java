package io.dilu.autoscaler;

import jakarta.enterprise.inject.Produces;
import jakarta.inject.Singleton;
import java.time.InstantSource;

/** The autoscaler's plain objects, built from its configuration. */
public class Producers {

    @Produces
    @Singleton
    InstantSource clock() {
        return InstantSource.system();
    }

    @Produces
    @Singleton
    TickProgress tickProgress(InstantSource clock, AutoscalerConfig config) {
        // One missed tick is a tick that ran into the next; two in a row is the least that says "stuck".
        if (config.livenessMissedTicks() < 2) {
            throw new IllegalArgumentException("dilu.autoscaler.liveness-missed-ticks must be at least 2, got "
                    + config.livenessMissedTicks());
        }
        return new TickProgress(clock, config.tick().multipliedBy(config.livenessMissedTicks()));
    }
}
