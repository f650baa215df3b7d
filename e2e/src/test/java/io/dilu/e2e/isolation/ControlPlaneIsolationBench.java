package io.dilu.e2e.isolation;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Runs every control-plane attack ({@link ControlPlaneAttacks}) against the webhook and the extender as deployed
 * and prints one {@code ATTACK} line each; {@code ./dilu bench isolation} sums these with the node's.
 */
public final class ControlPlaneIsolationBench {

    private ControlPlaneIsolationBench() {}

    public static void main(String[] args) throws Exception {
        Path work = Files.createTempDirectory("dilu-isolation-cp-");
        try (ControlPlaneAttacks attacks = ControlPlaneAttacks.start(work)) {
            for (ControlPlaneAttacks.Outcome o : attacks.runAll()) {
                System.out.printf("ATTACK %s contained=%s  %s%n", o.attack(), o.contained() ? "yes" : "NO",
                        o.detail().replace('\n', ' '));
            }
        }
    }
}
