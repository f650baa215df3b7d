package io.dilu.simulator.coscaling;

import static com.tngtech.archunit.core.domain.JavaCall.Predicates.target;
import static com.tngtech.archunit.core.domain.properties.HasName.Predicates.name;
import static com.tngtech.archunit.core.domain.properties.HasOwner.Predicates.With.owner;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import io.dilu.core.scaling.Autoscale;
import io.dilu.core.scaling.KnativePodAutoscaler;
import io.dilu.core.scaling.LazyHorizontalScaler;
import io.dilu.core.scaling.RevisionScaler;
import org.junit.jupiter.api.Test;

/**
 * The model decides Dilu's and Knative's scale with the autoscaler's own per-revision state machine, core's {@link
 * RevisionScaler}, and with nothing else (the autoscaler holds itself to the same rule, in its own OneScalerTest):
 * the copies of its state the model had before drifted from the product (KPA's recording condition, the scale-down
 * delay, the initial-scale hold).
 */
class OneScalerTest {

    private static final JavaClasses MODEL = new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS).importPackages("io.dilu.simulator");

    /** The decisions RevisionScaler makes with its own state around them. */
    static final DescribedPredicate<JavaClass> INSIDE = DescribedPredicate.describe("a decision inside RevisionScaler",
            c -> c.isEquivalentTo(Autoscale.class) || c.isEquivalentTo(LazyHorizontalScaler.class)
                    || c.isEquivalentTo(KnativePodAutoscaler.class));

    @Test
    void dilusAndKnativesPoliciesRunCoresRevisionScaler() {
        classes().that().haveSimpleName("DiluPolicy").or().haveSimpleName("KpaPolicy").should()
                .dependOnClassesThat().areAssignableTo(RevisionScaler.class).check(MODEL);
    }

    @Test
    void noModelClassDecidesAroundIt() {
        // A rule over no classes holds for nothing: the import must have found the policies it guards.
        assertThat(MODEL.contain(DiluPolicy.class) && MODEL.contain(KpaPolicy.class)).as("the model's policies imported")
                .isTrue();
        noClasses().should().callMethodWhere(target(name("decide")).and(target(owner(INSIDE))))
                .because("the model decides as the product does: through RevisionScaler").check(MODEL);
    }
}
