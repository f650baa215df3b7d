package io.dilu.e2e;

import io.dilu.core.contract.KnativeNames;
import io.dilu.testing.RealApiServer;
import io.fabric8.kubernetes.client.dsl.base.ResourceDefinitionContext;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Path;

/** Knative Serving's two internal CRDs the autoscaler works with (vendored under {@code /knative-crds}). */
public final class KnativeCrds {

    public static final ResourceDefinitionContext PA = new ResourceDefinitionContext.Builder()
            .withGroup(KnativeNames.PODAUTOSCALER_GROUP).withVersion(KnativeNames.INTERNAL_VERSION).withKind(KnativeNames.PODAUTOSCALER_KIND)
            .withPlural("podautoscalers").withNamespaced(true).build();

    private KnativeCrds() {}

    /** Installs PodAutoscaler and ServerlessService on the API server, as Knative Serving's install does. */
    public static void install(RealApiServer api) throws IOException, URISyntaxException {
        Path crds = Path.of(KnativeCrds.class.getResource("/knative-crds").toURI());
        api.installCrd(crds.resolve("podautoscalers.autoscaling.internal.knative.dev.yaml"));
        api.installCrd(crds.resolve("serverlessservices.networking.internal.knative.dev.yaml"));
    }
}
