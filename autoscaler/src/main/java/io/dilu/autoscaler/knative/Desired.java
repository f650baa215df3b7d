package io.dilu.autoscaler.knative;

import io.fabric8.kubernetes.api.model.OwnerReferenceBuilder;

/** The objects a PodAutoscaler should have, as pure functions of it and of the decision. */
public final class Desired {

    private Desired() {}

    /**
     * The revision's ServerlessService: {@code Serve} while instances are wanted, {@code Proxy} at zero (the
     * activator holds requests and reports them), owned by the PodAutoscaler so that it goes with it.
     */
    public static ServerlessService sks(PodAutoscaler pa, boolean serve, int activators) {
        PodAutoscaler.Spec spec = pa.getSpec();
        ServerlessService sks = new ServerlessService();
        sks.getMetadata().setName(pa.getMetadata().getName());
        sks.getMetadata().setNamespace(pa.getMetadata().getNamespace());
        sks.getMetadata().setLabels(pa.getMetadata().getLabels());
        sks.getMetadata().setOwnerReferences(java.util.List.of(new OwnerReferenceBuilder().withApiVersion(pa.getApiVersion())
                .withKind(pa.getKind()).withName(pa.getMetadata().getName()).withUid(pa.getMetadata().getUid())
                .withController(true).withBlockOwnerDeletion(true).build()));
        String protocol = spec == null || spec.protocolType() == null ? "http1" : spec.protocolType();
        sks.setSpec(new ServerlessService.Spec(serve ? ServerlessService.SERVE : ServerlessService.PROXY, activators,
                spec == null ? null : spec.scaleTargetRef(), protocol));
        return sks;
    }
}
