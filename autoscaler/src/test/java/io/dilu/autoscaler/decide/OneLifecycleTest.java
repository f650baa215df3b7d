package io.dilu.autoscaler.decide;

import static com.tngtech.archunit.core.domain.JavaCall.Predicates.target;
import static com.tngtech.archunit.core.domain.properties.HasName.Predicates.name;
import static com.tngtech.archunit.core.domain.properties.HasName.Predicates.nameMatching;
import static com.tngtech.archunit.core.domain.properties.HasOwner.Predicates.With.owner;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import io.dilu.autoscaler.knative.PaWriter;
import io.dilu.core.lifecycle.InstanceLifecycle;
import org.junit.jupiter.api.Test;

/**
 * The autoscaler moves an instance through its lifecycle (parks, wakes, moves its serving condition, replaces it after
 * a refused wake) only as core's {@link InstanceLifecycle} plans it, by its Kubernetes realizer ({@code PodLifecycle}), as the co-scaling model carries
 * the same plan out in memory (the model's own OneLifecycleTest): which pod wakes, what a refused wake does and the order of the writes are then one
 * rule, not a copy per module.
 */
class OneLifecycleTest {

    private static final JavaClasses AUTOSCALER = new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS).importPackages("io.dilu.autoscaler");

    /** PaWriter's writes of an instance's lifecycle, as opposed to the scale, the ServerlessService and the status. */
    static final DescribedPredicate<JavaClass> WRITER = DescribedPredicate.describe("PaWriter",
            c -> c.isEquivalentTo(PaWriter.class));

    /** The Kubernetes realizer, which carries the plan out as pod writes. */
    static final String REALIZER = "io.dilu.autoscaler.knative.PodLifecycle";

    @Test
    void theRealizerWritesWhatTheLifecyclePlans() {
        assertThat(AUTOSCALER.contain(REALIZER)).as("the autoscaler's classes imported").isTrue();
        assertThat(AUTOSCALER.get(REALIZER).getMethodCallsFromSelf()).as("PodLifecycle plans with core")
                .anyMatch(c -> c.getTarget().getOwner().isEquivalentTo(InstanceLifecycle.class)
                        && c.getTarget().getName().equals("plan"))
                .anyMatch(c -> c.getTarget().getOwner().isEquivalentTo(InstanceLifecycle.Plan.class)
                        && c.getTarget().getName().equals("realize"));
    }

    @Test
    void nothingElseParksWakesOrReplacesAnInstance() {
        noClasses().that().doNotHaveFullyQualifiedName(REALIZER).should()
                .callMethodWhere(target(nameMatching("park|wake|serving|delete")).and(target(owner(WRITER))))
                .because("an instance's lifecycle is written only as InstanceLifecycle plans it").check(AUTOSCALER);
    }

    @Test
    void noIntentIsMadeOutsideCore() {
        noClasses().should().callConstructorWhere(target(owner(DescribedPredicate.describe("an intent",
                        (JavaClass c) -> c.isAssignableTo(InstanceLifecycle.Intent.class)))))
                .because("the writes and their order are the plan's").check(AUTOSCALER);
        noClasses().should().callMethodWhere(target(name("wake")).and(target(owner(DescribedPredicate.describe(
                        "InstanceLifecycle", (JavaClass c) -> c.isEquivalentTo(InstanceLifecycle.class))))))
                .because("the autoscaler's wakes are the plan's, which applies the rule itself").check(AUTOSCALER);
    }
}
