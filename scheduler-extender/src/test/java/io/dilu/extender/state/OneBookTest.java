package io.dilu.extender.state;

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
import io.dilu.core.placement.InstanceBook;
import io.dilu.core.placement.ParkedEviction;
import org.junit.jupiter.api.Test;

/**
 * The extender books, parks, wakes, evicts and hands back an instance only through core's {@link InstanceBook}, the
 * book the co-scaling fleet model keeps too (its own OneBookTest): a wake admitted or a parked pod evicted is then
 * one rule, not a copy per module.
 */
class OneBookTest {

    @Test
    void theExtenderBooksOnlyThroughTheCoreBook() {
        JavaClasses extender = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .importPackages("io.dilu.extender");
        // What only the core book may do with the bookings: book, admit a wake, evict, hand back, place.
        DescribedPredicate<JavaClass> around = DescribedPredicate.describe("booking, wake admission or eviction",
                c -> c.isEquivalentTo(ClusterState.class) || c.isEquivalentTo(ParkedEviction.class)
                        || c.isEquivalentTo(ComplementaryPlacement.class));
        assertThat(extender.contain(PlacementBook.class)).as("the extender's classes imported").isTrue();
        assertThat(extender.get(PlacementBook.class).getDirectDependenciesFromSelf())
                .anyMatch(d -> d.getTargetClass().isEquivalentTo(InstanceBook.class));
        noClasses().should().callMethodWhere(target(nameMatching("apply|release|victims|alone|refusal|fits|decide"))
                        .and(target(owner(around))))
                .because("an instance's booking is InstanceBook's: parked at its memory, woken where it fits, evicted or "
                        + "handed back by one rule").check(extender);
    }
}
