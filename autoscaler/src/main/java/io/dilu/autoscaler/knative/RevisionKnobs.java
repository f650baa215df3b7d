package io.dilu.autoscaler.knative;

import io.dilu.autoscaler.AutoscalerConfig;
import io.dilu.autoscaler.decide.ServingRate;
import io.dilu.core.contract.KnativeNames;
import io.dilu.core.quota.FieldError;
import io.dilu.core.scaling.InstanceRate;
import io.dilu.core.scaling.KnativeAutoscalerConfig;
import io.dilu.core.scaling.Knobs;
import io.dilu.kube.profile.GpuFunctionProfile;
import io.dilu.kube.profile.ProfileSettings;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import org.jboss.logging.Logger;

/**
 * A revision's knobs ({@link Knobs}), read from its PodAutoscaler's annotations, the cluster's config-autoscaler and
 * its GpuFunctionProfile, and read again only when one of them changed: a tick reads every revision, and reading them
 * every second cost as much as the decision and logged the same malformed annotation every second. Problems are
 * logged once per read.
 */
final class RevisionKnobs {

    private static final Logger LOG = Logger.getLogger(RevisionKnobs.class);

    /** A revision's knobs as last read, and the versions they were read from. */
    record Read(String paVersion, String clusterVersion, long profilesVersion, Knobs knobs) {}

    private final AutoscalerConfig config;
    private final SharedIndexInformer<GpuFunctionProfile> profiles;
    /** Counts the profile watch's events: a revision's serving rate may come from any profile of its namespace. */
    private final AtomicLong profilesVersion = new AtomicLong();

    RevisionKnobs(AutoscalerConfig config, SharedIndexInformer<GpuFunctionProfile> profiles) {
        this.config = config;
        this.profiles = profiles;
        profiles.addEventHandler(new ResourceEventHandler<>() {
            @Override
            public void onAdd(GpuFunctionProfile p) {
                profilesVersion.incrementAndGet();
            }

            @Override
            public void onUpdate(GpuFunctionProfile before, GpuFunctionProfile after) {
                profilesVersion.incrementAndGet();
            }

            @Override
            public void onDelete(GpuFunctionProfile p, boolean unknownFinalState) {
                profilesVersion.incrementAndGet();
            }
        });
    }

    /** The knobs, from {@code last} where nothing they were read from changed; otherwise read anew. */
    Read read(PodAutoscaler pa, Read last, KnativeAutoscalerConfig cluster, String clusterVersion) {
        String paVersion = pa.getMetadata().getResourceVersion();
        long profilesSeen = profilesVersion.get();
        if (last != null && Objects.equals(last.paVersion(), paVersion) && Objects.equals(last.clusterVersion(), clusterVersion)
                && last.profilesVersion() == profilesSeen) {
            return last;
        }
        List<FieldError> problems = new ArrayList<>();
        Read read = new Read(paVersion, clusterVersion, profilesSeen, knobs(pa, cluster, problems));
        problems.forEach(p -> LOG.warnf("PodAutoscaler %s: %s", pa.key(), p.message()));
        return read;
    }

    private Knobs knobs(PodAutoscaler pa, KnativeAutoscalerConfig cluster, List<FieldError> problems) {
        boolean toZero = config.scaleToZero(cluster);
        if (KnativeNames.KPA_CLASS.equals(pa.paClass()) && !KnativeNames.KPA_CLASS.equals(config.paClass())) {
            long cc = pa.getSpec() == null || pa.getSpec().containerConcurrency() == null ? 0 : pa.getSpec().containerConcurrency();
            return Knobs.kpa(pa.annotations(), Math.max(0, cc), cluster, toZero, problems);
        }
        return Knobs.lazy(pa.annotations(), cluster, config.lazyScaling().windowSeconds(), servingRate(pa, cluster, problems),
                toZero, config.parking(), problems);
    }

    /** What one instance of the revision serves: its profile's measure, its annotation, or the configured default. */
    InstanceRate servingRate(PodAutoscaler pa, KnativeAutoscalerConfig cluster, List<FieldError> problems) {
        String ns = pa.getMetadata().getNamespace();
        return ServingRate.of(pa.annotations(), pa.labels(), cluster,
                name -> Optional.ofNullable(profiles.getStore().getByKey(ns + "/" + name)).flatMap(p -> settings(p, problems)),
                function -> profiles.getStore().list().stream().filter(p -> ns.equals(p.getMetadata().getNamespace()))
                        .filter(p -> p.getSpec() != null && function.equals(p.getSpec().function())).findFirst()
                        .flatMap(p -> settings(p, problems)),
                config.defaultServingRps(), problems);
    }

    /** A profile's settings; a value it refuses is reported with the profile's name. */
    private static Optional<ProfileSettings> settings(GpuFunctionProfile p, List<FieldError> problems) {
        List<FieldError> own = new ArrayList<>();
        Optional<ProfileSettings> s = p.settings(own);
        own.forEach(e -> problems.add(new FieldError("GpuFunctionProfile " + p.getMetadata().getName() + " " + e.field(),
                e.value(), e.allowed())));
        return s;
    }
}
