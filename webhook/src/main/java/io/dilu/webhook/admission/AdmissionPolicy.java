package io.dilu.webhook.admission;

import io.dilu.core.contract.QuotaRights;
import java.util.List;
import java.util.Set;

/**
 * What the webhook enforces beyond the pod's own fields, from its configuration (see {@code WebhookConfig}).
 *
 * @param hook how GPU containers get the hook, and the scheduler they must use
 * @param protectedHostPaths host directories no hostPath volume may reach (at, under or above)
 * @param protectedContainerPaths paths in GPU containers no volumeMount may cover (at or under)
 * @param assignedGpusWriters users that may change {@code dilu.io/assigned-gpus} on an existing pod
 * @param parkingWriters users that may change the parking annotations ({@code dilu.io/parked}, {@code dilu.io/wake},
 *     {@code dilu.io/wake-failed}) on an existing pod
 * @param maxRequestBytes the largest AdmissionReview read
 * @param maxContainers the most containers, all kinds together, of a pod
 * @param etaViolation the KLC threshold the nodes run at, below which a pod's own needs the quota right ({@link QuotaRights})
 */
public record AdmissionPolicy(HookSettings hook, List<String> protectedHostPaths, List<String> protectedContainerPaths,
        Set<String> assignedGpusWriters, Set<String> parkingWriters, long maxRequestBytes, int maxContainers,
        double etaViolation) {

    public AdmissionPolicy {
        protectedHostPaths = List.copyOf(protectedHostPaths);
        protectedContainerPaths = List.copyOf(protectedContainerPaths);
        assignedGpusWriters = Set.copyOf(assignedGpusWriters);
        parkingWriters = Set.copyOf(parkingWriters);
    }
}
