package io.dilu.autoscaler.decide;

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
import io.dilu.autoscaler.knative.PaReconciler;
import io.dilu.core.scaling.Autoscale;
import io.dilu.core.scaling.KnativePodAutoscaler;
import io.dilu.core.scaling.LazyHorizontalScaler;
import io.dilu.core.scaling.RevisionScaler;
import org.junit.jupiter.api.Test;

/**
 * The autoscaler decides Dilu's and Knative's scale with core's per-revision state machine, {@link
 * RevisionScaler}, and with nothing else, as the co-scaling model does (its own OneScalerTest): what the model
 * predicts is then what the product decides.
 */
class OneScalerTest {

    private static final JavaClasses AUTOSCALER = new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS).importPackages("io.dilu.autoscaler");

    /** The decisions RevisionScaler makes with its own state around them. */
    static final DescribedPredicate<JavaClass> INSIDE = DescribedPredicate.describe("a decision inside RevisionScaler",
            c -> c.isEquivalentTo(Autoscale.class) || c.isEquivalentTo(LazyHorizontalScaler.class)
                    || c.isEquivalentTo(KnativePodAutoscaler.class));

    @Test
    void theReconcilerRunsCoresRevisionScaler() {
        classes().that().haveSimpleName("PaReconciler").should()
                .dependOnClassesThat().areAssignableTo(RevisionScaler.class).check(AUTOSCALER);
    }

    @Test
    void noAutoscalerClassDecidesAroundIt() {
        // A rule over no classes holds for nothing: the import must have found the reconciler it guards.
        assertThat(AUTOSCALER.contain(PaReconciler.class)).as("the autoscaler's classes imported").isTrue();
        noClasses().should().callMethodWhere(target(name("decide")).and(target(owner(INSIDE))))
                .because("the autoscaler decides as its model does: through RevisionScaler").check(AUTOSCALER);
    }
}
