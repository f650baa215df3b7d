package io.dilu.extender;

import io.dilu.extender.state.PlacementBook;
import jakarta.enterprise.inject.Produces;
import jakarta.inject.Singleton;
import java.time.InstantSource;

/** The extender's plain objects, built from its configuration. */
public class Producers {

    @Produces
    @Singleton
    PlacementBook book(ExtenderConfig config) {
        return new PlacementBook(config.placement(), config.defaultMemoryMib(), config.reservationTtl());
    }

    @Produces
    @Singleton
    InstantSource clock() {
        return InstantSource.system();
    }
}
