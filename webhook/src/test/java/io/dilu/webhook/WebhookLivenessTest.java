package io.dilu.webhook;

import static io.restassured.RestAssured.given;
import static org.assertj.core.api.Assertions.assertThat;

import io.quarkus.test.junit.QuarkusTest;
import org.junit.jupiter.api.Test;

@QuarkusTest
class WebhookLivenessTest {

    @Test
    void reportsItselfLive() {
        var health = given().when().get("/q/health/live").then().statusCode(200).extract().jsonPath();
        assertThat(health.getString("status")).isEqualTo("UP");
        assertThat(health.getList("checks.name", String.class)).contains(WebhookLiveness.NAME);
    }
}
