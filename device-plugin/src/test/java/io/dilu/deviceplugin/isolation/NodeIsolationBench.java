package io.dilu.deviceplugin.isolation;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

/**
 * Runs every node-level attack ({@link NodeAttacks}) and prints one {@code ATTACK} line each: whether it was
 * contained, and the attacker's launch rate beside its grant where that is the measure (emulated GPU). The
 * control-plane attacks are the e2e module's; {@code ./dilu bench isolation} runs both and sums them up.
 *
 * <p>Usage: {@code NodeIsolationBench NATIVE_BUILD_DIR}.
 */
public final class NodeIsolationBench {

    private NodeIsolationBench() {}

    public static void main(String[] args) throws Exception {
        Path work = Files.createTempDirectory("dilu-isolation-");
        for (NodeAttacks.Outcome o : new NodeAttacks(Path.of(args[0]), work).runAll()) {
            System.out.printf(Locale.ROOT, "ATTACK %s contained=%s attacker_blocks_per_s=%s grant_blocks_per_s=%s  %s%n",
                    o.attack(), o.contained() ? "yes" : "NO", figure(o.attackerBlocksPerSecond()),
                    figure(o.grantBlocksPerSecond()), o.detail().replace('\n', ' '));
        }
    }

    private static String figure(double v) {
        return Double.isNaN(v) ? "-" : String.format(Locale.ROOT, "%.0f", v);
    }
}
