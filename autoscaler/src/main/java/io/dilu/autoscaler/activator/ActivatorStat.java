package io.dilu.autoscaler.activator;

import java.util.Objects;

/**
 * What one activator pod reported for one revision over its last reporting period (one second), once checked.
 *
 * @param revision the revision the activator proxied for
 * @param pod the activator's pod name
 * @param concurrency the requests it held or proxied on average over the period
 * @param requestCount the requests it received in the period: a rate per second, as the period is one second
 */
public record ActivatorStat(RevisionKey revision, String pod, double concurrency, double requestCount) {

    public ActivatorStat {
        Objects.requireNonNull(revision, "revision");
        Objects.requireNonNull(pod, "pod");
    }

    /** Whether the activator saw requests: what wakes a revision at zero. */
    public boolean active() {
        return concurrency > 0 || requestCount > 0;
    }
}
