package io.dilu.deviceplugin.isolation;

import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.deviceplugin.testing.TestingContainers;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Every attack a tenant can make from inside its container on the node is contained (see {@link NodeAttacks}). */
class NodeIsolationIT {

    @TempDir
    Path tmp;

    @Test
    void everyAttackFromInsideAContainerIsContained() throws Exception {
        TestingContainers.assumeRoot();
        List<NodeAttacks.Outcome> outcomes = new NodeAttacks(TestingContainers.nativeDir(), tmp).runAll();
        assertThat(outcomes).hasSizeGreaterThanOrEqualTo(44);
        assertThat(outcomes).allSatisfy(o -> assertThat(o.contained()).as("%s: %s", o.attack(), o.detail()).isTrue());
    }
}
