package io.dilu.core;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import java.time.Clock;
import java.time.Instant;
import java.time.LocalDateTime;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The decision core stays pure: no Kubernetes, Quarkus or gRPC, and no clock of its own. */
class ArchitectureTest {

    private static JavaClasses core;

    @BeforeAll
    static void importCore() {
        core = new ClassFileImporter()
                .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .importPackages("io.dilu.core");
    }

    @Test
    void theRulesSeeTheWholeCore() {
        // An empty import would make every rule below pass vacuously.
        assertThat(core.stream().map(c -> c.getPackageName()).distinct())
                .contains("io.dilu.core.placement", "io.dilu.core.tokens", "io.dilu.core.scaling",
                        "io.dilu.core.profiling", "io.dilu.core.quota");
    }

    @Test
    void coreHasNoKubernetesQuarkusOrGrpc() {
        noClasses().should().dependOnClassesThat()
                .resideInAnyPackage("io.fabric8..", "io.quarkus..", "io.grpc..", "jakarta.enterprise..")
                .because("core/ is the pure decision core; I/O lives in the adapter modules")
                .check(core);
    }

    @Test
    void coreNeverReadsTheWallClock() throws Exception {
        noClasses().should().callMethod(System.class, "currentTimeMillis")
                .orShould().callMethod(System.class, "nanoTime")
                .orShould().callMethod(Instant.class, "now")
                .orShould().callMethod(LocalDateTime.class, "now")
                .orShould().callMethod(Clock.class, "systemUTC")
                .orShould().callMethod(Clock.class, "systemDefaultZone")
                .because("decisions are functions of the time passed in")
                .check(core);
    }
}
