package io.dilu.kube;

import io.dilu.core.contract.AssignedGpus;
import io.dilu.core.contract.DiluNames;

/**
 * The JSON Patch that writes {@code dilu.io/assigned-gpus} on a pod, for the extender at bind and the node
 * agent when the node disagrees. It tests the pod's UID first, so a pod re-created under the same name
 * never receives another's GPUs.
 */
public final class AssignedGpusPatch {

    private AssignedGpusPatch() {}

    /**
     * @param podHasAnnotations whether the pod has any annotation: a JSON Patch can only add a key to a map
     *     that exists, so a pod without annotations gets the whole map
     */
    public static String json(String uid, boolean podHasAnnotations, AssignedGpus gpus) {
        String key = DiluNames.ASSIGNED_GPUS.replace("~", "~0").replace("/", "~1");
        String set = podHasAnnotations
                ? "{\"op\":\"add\",\"path\":\"/metadata/annotations/" + key + "\",\"value\":\"" + gpus.format() + "\"}"
                : "{\"op\":\"add\",\"path\":\"/metadata/annotations\",\"value\":{\"" + DiluNames.ASSIGNED_GPUS + "\":\""
                        + gpus.format() + "\"}}";
        return "[{\"op\":\"test\",\"path\":\"/metadata/uid\",\"value\":\"" + uid + "\"}," + set + "]";
    }
}
