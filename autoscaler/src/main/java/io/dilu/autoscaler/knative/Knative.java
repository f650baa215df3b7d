package io.dilu.autoscaler.knative;

import io.fabric8.kubernetes.client.dsl.base.ResourceDefinitionContext;

/** The Knative resources and names the autoscaler works with (knative.dev/serving, internal APIs). */
public final class Knative {

    private Knative() {}

    public static final String CLASS = "autoscaling.knative.dev/class";
    public static final String REVISION_LABEL = "serving.knative.dev/revision";

    public static final ResourceDefinitionContext PODAUTOSCALER = new ResourceDefinitionContext.Builder()
            .withGroup("autoscaling.internal.knative.dev").withVersion("v1alpha1").withKind("PodAutoscaler")
            .withPlural("podautoscalers").withNamespaced(true).build();

    public static final ResourceDefinitionContext SERVERLESSSERVICE = new ResourceDefinitionContext.Builder()
            .withGroup("networking.internal.knative.dev").withVersion("v1alpha1").withKind("ServerlessService")
            .withPlural("serverlessservices").withNamespaced(true).build();
}
