package io.dilu.simulator.coscaling;

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
import io.dilu.core.lifecycle.InstanceLifecycle;
import io.dilu.core.placement.ClusterState;
import io.dilu.core.placement.ComplementaryPlacement;
import io.dilu.core.placement.ParkedEviction;
import org.junit.jupiter.api.Test;

/**
 * The model moves an instance through its lifecycle only as core's {@link InstanceLifecycle} plans it, the plan the
 * autoscaler's Kubernetes realizer carries out (its own OneLifecycleTest): which parked instance wakes, what a refused
 * wake does, which instance parks and the order of the writes are one rule, not a copy per module. The pool is asked
 * whether a wake fits only to answer a wake the plan asked, as the scheduler extender answers it.
 */
class OneLifecycleTest {

    private static final JavaClasses MODEL = new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS).importPackages("io.dilu.simulator");

    private static final DescribedPredicate<JavaClass> POOL = DescribedPredicate.describe("a pool",
            c -> c.isAssignableTo(FunctionRun.Pool.class));

    @Test
    void theModelCarriesOutCoresPlan() {
        assertThat(MODEL.contain(FunctionRun.class)).as("the model's classes imported").isTrue();
        assertThat(MODEL.get(FunctionRun.class).getMethodCallsFromSelf()).as("FunctionRun plans with core")
                .anyMatch(c -> c.getTarget().getOwner().isEquivalentTo(InstanceLifecycle.class)
                        && c.getTarget().getName().equals("plan"))
                .anyMatch(c -> c.getTarget().getOwner().isEquivalentTo(InstanceLifecycle.Plan.class)
                        && c.getTarget().getName().equals("realize"));
        noClasses().should().callMethodWhere(target(name("wake")).and(target(owner(DescribedPredicate.describe(
                        "InstanceLifecycle", (JavaClass c) -> c.isEquivalentTo(InstanceLifecycle.class))))))
                .because("which parked instance wakes is the plan's, which applies the one wake rule itself").check(MODEL);
        noClasses().should().callConstructorWhere(target(owner(DescribedPredicate.describe("an intent",
                        (JavaClass c) -> c.isAssignableTo(InstanceLifecycle.Intent.class)))))
                .because("the writes and their order are the plan's").check(MODEL);
    }

    @Test
    void thePoolAnswersOnlyTheWakesThePlanAsked() {
        noClasses().that().doNotHaveFullyQualifiedName(FunctionRun.class.getName()).should()
                .callMethodWhere(target(name("wake")).and(target(owner(POOL))))
                .because("a wake is asked by the plan and answered by the model's extender").check(MODEL);
        assertThat(MODEL.get(FunctionRun.class).getMethodCallsFromSelf().stream()
                .filter(c -> c.getTarget().getName().equals("wake") && POOL.test(c.getTarget().getOwner())))
                .as("FunctionRun asks the pool only in answerWakes, for instances the plan woke")
                .isNotEmpty().allMatch(c -> c.getOrigin().getName().equals("answerWakes"));
    }

    /**
     * Nor is an instance booked, parked, woken, evicted or handed back around core's {@code InstanceBook}, the book the
     * scheduler extender keeps (its OneBookTest); where a new instance goes is Algorithm 1's to say ({@code decide}).
     */
    @Test
    void theFleetBooksOnlyThroughTheCoreBook() {
        noClasses().that().resideInAPackage("..coscaling..").should().callMethodWhere(
                        target(nameMatching("apply|release|victims|alone|refusal|fits")).and(target(owner(
                                DescribedPredicate.describe("the bookings", (JavaClass c) -> c.isEquivalentTo(
                                        ClusterState.class) || c.isEquivalentTo(ParkedEviction.class)
                                        || c.isEquivalentTo(ComplementaryPlacement.class))))))
                .because("an instance's booking is InstanceBook's, as in the scheduler extender").check(MODEL);
    }
}
