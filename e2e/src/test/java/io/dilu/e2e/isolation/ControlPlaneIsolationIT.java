package io.dilu.e2e.isolation;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Every attack a tenant can make on the webhook and the extender is contained (see {@link ControlPlaneAttacks}). */
class ControlPlaneIsolationIT {

    @TempDir
    Path tmp;

    @Test
    void everyAttackOnTheControlPlaneIsContained() throws Exception {
        try (ControlPlaneAttacks attacks = ControlPlaneAttacks.start(tmp)) {
            List<ControlPlaneAttacks.Outcome> outcomes = attacks.runAll();
            assertThat(outcomes).hasSizeGreaterThanOrEqualTo(50);
            assertThat(outcomes).allSatisfy(o -> assertThat(o.contained()).as("%s: %s", o.attack(), o.detail()).isTrue());
        }
    }
}
