package io.dilu.deviceplugin;

import static io.restassured.RestAssured.given;
import static org.assertj.core.api.Assertions.assertThat;

import io.quarkus.test.junit.QuarkusTest;
import org.junit.jupiter.api.Test;

@QuarkusTest
class NodeAgentLivenessTest {

    @Test
    void reportsItselfLive() {
        var health = given().when().get("/q/health/live").then().statusCode(200).extract().jsonPath();
        assertThat(health.getString("status")).isEqualTo("UP");
        assertThat(health.getList("checks.name", String.class)).contains(NodeAgentLiveness.NAME);
    }
}
