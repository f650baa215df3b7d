package io.dilu.autoscaler.scrape;

import io.dilu.autoscaler.AutoscalerConfig;
import io.dilu.testing.ShippedConfig;

/**
 * Runs every hostile scrape answer ({@link ScrapeAttacks}) at the autoscaler's shipped limits ({@link AutoscalerConfig}'s
 * defaults) and prints one {@code ATTACK} line each;
 * {@code ./dilu bench isolation} sums them with the node's and the control plane's.
 */
public final class ScrapeIsolationBench {

    private ScrapeIsolationBench() {}

    public static void main(String[] args) throws Exception {
        // The limits exactly as the autoscaler ships them.
        AutoscalerConfig shipped = ShippedConfig.defaults(AutoscalerConfig.class).getConfigMapping(AutoscalerConfig.class);
        for (ScrapeAttacks.Outcome o : ScrapeAttacks.runAll(shipped.scrapeTimeout(), shipped.scrapeMaxBytes(),
                shipped.maxPodRps())) {
            System.out.printf("ATTACK %s contained=%s  %s%n", o.attack(), o.contained() ? "yes" : "NO", o.detail());
        }
    }
}
