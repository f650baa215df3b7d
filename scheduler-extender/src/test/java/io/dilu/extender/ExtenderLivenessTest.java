package io.dilu.extender;

import static io.restassured.RestAssured.given;
import static org.assertj.core.api.Assertions.assertThat;

import io.quarkus.test.common.http.TestHTTPResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;
import java.net.URI;
import java.net.URL;
import org.junit.jupiter.api.Test;

/** Health and metrics on the management interface only; the extender API only on its own (loopback) port. */
@QuarkusTest
class ExtenderLivenessTest {

    /** The management interface's root, {@code /q/}. */
    @TestHTTPResource(value = "/", management = true)
    URL management;

    @TestHTTPResource("/")
    URL api;

    @Test
    void reportsItselfLiveOnTheManagementInterface() {
        var health = given().when().get(management + "health/live").then().statusCode(200).extract().jsonPath();
        assertThat(health.getString("status")).isEqualTo("UP");
        assertThat(health.getList("checks.name", String.class)).contains(ExtenderLiveness.NAME);
        assertThat(given().when().get(management + "metrics").then().statusCode(200).extract().asString())
                .contains("dilu_extender_refused_total");
    }

    @Test
    void theApiAndTheManagementInterfaceServeNothingOfEachOther() {
        assertThat(management.getPort()).isNotEqualTo(api.getPort());
        given().when().get(api + "q/health/live").then().statusCode(404);
        given().when().get(api + "q/metrics").then().statusCode(404);
        for (String verb : new String[] {"filter", "prioritize", "bind"}) {
            String url = URI.create(management.toString()).resolve("/" + verb).toString();
            given().contentType(ContentType.JSON).body("{}").post(url).then().statusCode(404);
        }
    }
}
