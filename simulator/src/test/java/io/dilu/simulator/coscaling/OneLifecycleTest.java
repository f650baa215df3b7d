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
 * The model wakes a parked instance by core's one wake rule ({@link InstanceLifecycle#wake}), the rule the
 * autoscaler's plan applies (its own OneLifecycleTest): the pool is asked whether a wake fits only through the rule,
 * so no model class can pick which parked instance wakes, or what a refused wake does, on its own.
 */
class OneLifecycleTest {

    private static final JavaClasses MODEL = new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS).importPackages("io.dilu.simulator");

    @Test
    void theModelWakesByCoresRule() {
        assertThat(MODEL.contain(FunctionRun.class)).as("the model's classes imported").isTrue();
        assertThat(MODEL.get(FunctionRun.class).getMethodCallsFromSelf()).as("FunctionRun wakes with core's rule")
                .anyMatch(c -> c.getTarget().getOwner().isEquivalentTo(InstanceLifecycle.class)
                        && c.getTarget().getName().equals("wake"));
        // A method reference handed to the rule is not a call: any call of Pool.wake picks a wake around it.
        noClasses().should().callMethodWhere(target(name("wake")).and(target(owner(DescribedPredicate.describe(
                        "a pool", (JavaClass c) -> c.isAssignableTo(FunctionRun.Pool.class))))))
                .because("which parked instance wakes is InstanceLifecycle.wake's to say").check(MODEL);
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
