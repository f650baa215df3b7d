package io.dilu.simulator.coscaling;

import static com.tngtech.archunit.core.domain.JavaCall.Predicates.target;
import static com.tngtech.archunit.core.domain.properties.HasName.Predicates.nameMatching;
import static com.tngtech.archunit.core.domain.properties.HasOwner.Predicates.With.owner;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import io.dilu.core.placement.ClusterState;
import io.dilu.core.placement.ComplementaryPlacement;
import io.dilu.core.placement.ParkedEviction;
import org.junit.jupiter.api.Test;

/**
 * The co-scaling fleet books, parks, wakes, evicts and hands back an instance only through core's {@code InstanceBook},
 * the book the scheduler extender keeps (its own OneBookTest). Placement itself (where a new instance goes) is
 * Algorithm 1's, which the fleet may ask of {@link ComplementaryPlacement#decide} for a resident.
 */
class OneBookTest {

    private static final JavaClasses FLEET = new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS).importPackages("io.dilu.simulator.coscaling");

    static final DescribedPredicate<JavaClass> AROUND = DescribedPredicate.describe("booking, wake admission or eviction",
            c -> c.isEquivalentTo(ClusterState.class) || c.isEquivalentTo(ParkedEviction.class)
                    || c.isEquivalentTo(ComplementaryPlacement.class));

    @Test
    void theFleetBooksOnlyThroughTheCoreBook() {
        assertThat(FLEET.contain(CoScalingFleet.class)).as("the fleet's classes imported").isTrue();
        noClasses().should().callMethodWhere(target(nameMatching("apply|release|victims|alone|refusal|fits"))
                        .and(target(owner(AROUND))))
                .because("an instance's booking is InstanceBook's, as in the scheduler extender").check(FLEET);
    }
}
