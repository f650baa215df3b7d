package io.dilu.extender;

import static io.restassured.RestAssured.given;
import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.core.placement.GpuDevice;
import io.dilu.extender.state.PlacementBook;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;
import jakarta.inject.Inject;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The wire format kube-scheduler speaks (Go field names, no JSON tags), over real HTTP. */
@QuarkusTest
class ExtenderResourceTest {

    @Inject
    PlacementBook book;

    @BeforeEach
    void nodes() {
        book.putNode("n0", List.of(new GpuDevice("n0-gpu0", 0, "A100", 40_960, 108)));
        book.putNode("n1", List.of(new GpuDevice("n1-gpu0", 0, "A100", 40_960, 108)));
    }

    static String args(String uid, String resources) {
        return """
                {"Pod":{"metadata":{"name":"p-%s","namespace":"ns","uid":"%s"},
                 "spec":{"containers":[{"name":"c","image":"x","resources":%s}]}},
                 "Nodes":null,"NodeNames":["n0","n1"]}""".formatted(uid, uid, resources);
    }

    @Test
    void aGpuPodIsFilteredToOneNodeWhichPrioritizeRanksFirst() {
        String body = args("u-gpu", "{\"limits\":{\"dilu.io/gpu-sm\":\"30\",\"dilu.io/gpu-memory\":\"2048\"}}");
        var filter = given().contentType(ContentType.JSON).body(body).post("/filter").then().statusCode(200)
                .extract().jsonPath();
        List<String> passed = filter.getList("NodeNames", String.class);
        assertThat(passed).hasSize(1);
        assertThat(filter.getMap("FailedNodes")).isEmpty();
        var scores = given().contentType(ContentType.JSON).body(body).post("/prioritize").then().statusCode(200)
                .extract().jsonPath();
        assertThat(scores.getList("Host", String.class)).containsExactlyElementsOf(passed);
        assertThat(scores.getList("Score", Long.class)).containsExactly(10L);
    }

    @Test
    void aPodWithoutDiluResourcesPassesThroughUntouched() {
        var filter = given().contentType(ContentType.JSON).body(args("u-plain", "{\"limits\":{\"cpu\":\"1\"}}"))
                .post("/filter").then().statusCode(200).extract().jsonPath();
        assertThat(filter.getList("NodeNames", String.class)).containsExactly("n0", "n1");
        assertThat(filter.getMap("FailedNodes")).isEmpty();
    }

    @Test
    void bindWithoutAReservationIsRefusedWithAReasonAndMalformedInputIsA400() {
        given().contentType(ContentType.JSON).body("{\"Pod\": [1,2]}").post("/filter").then().statusCode(400);
        var bind = given().contentType(ContentType.JSON).body("{\"PodName\":\"p\",\"PodNamespace\":\"ns\"}")
                .post("/bind").then().statusCode(200).extract().jsonPath();
        assertThat(bind.getString("Error")).contains("PodName, PodNamespace, PodUID and Node");
    }
}
