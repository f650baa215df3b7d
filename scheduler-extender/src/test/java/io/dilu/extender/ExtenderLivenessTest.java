package io.dilu.extender;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.hasItem;

import io.quarkus.test.junit.QuarkusTest;
import org.junit.jupiter.api.Test;

@QuarkusTest
class ExtenderLivenessTest {

    @Test
    void reportsItselfLive() {
        given().when().get("/q/health/live")
                .then().statusCode(200)
                .body("status", equalTo("UP"))
                .body("checks.name", hasItem(ExtenderLiveness.NAME));
    }
}
