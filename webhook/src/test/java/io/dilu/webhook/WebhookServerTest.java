package io.dilu.webhook;

import static io.restassured.RestAssured.given;
import static org.assertj.core.api.Assertions.assertThat;

import io.dilu.testing.DocumentedMetrics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.common.http.TestHTTPResource;
import io.quarkus.test.junit.QuarkusTest;
import java.net.URL;
import org.junit.jupiter.api.Test;

/**
 * The server as configured: admission only over HTTPS, health and metrics only on the plain-HTTP management
 * interface.
 */
@QuarkusTest
@QuarkusTestResource(TestCertificate.class)
class WebhookServerTest {

    static final String REVIEW = """
            {"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-1",\
            "kind":{"group":"","version":"v1","kind":"Pod"},"operation":"CREATE","namespace":"fns",\
            "object":{"metadata":{"name":"web"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}""";

    /** The management interface's root path, {@code /q/}. */
    @TestHTTPResource(value = "/", management = true)
    URL management;

    @TestHTTPResource(value = "/", tls = true)
    URL https;

    @Test
    void reportsItselfLiveOnTheManagementInterface() {
        assertThat(management.getProtocol()).isEqualTo("http");
        var health = given().when().get(management + "health/live").then().statusCode(200).extract().jsonPath();
        assertThat(health.getString("status")).isEqualTo("UP");
        assertThat(health.getList("checks.name", String.class)).contains(WebhookLiveness.NAME);
        given().when().get(management + "metrics").then().statusCode(200);
    }

    @Test
    void isReadyOnlyOnceTheHttpsServerListens() {
        var ready = given().when().get(management + "health/ready").then().statusCode(200).extract().jsonPath();
        assertThat(ready.getList("checks.name", String.class)).contains(AdmissionReadiness.NAME);
    }

    @Test
    void admissionIsAnsweredOverHttpsOnly() throws Exception {
        assertThat(https.getProtocol()).isEqualTo("https");
        String answer = given().relaxedHTTPSValidation().contentType("application/json").body(REVIEW)
                .post(https + "validate").then().statusCode(200).extract().asString();
        assertThat(answer).contains("\"uid\":\"u-1\"").contains("\"allowed\":true");
        // The management interface is the only plain-HTTP listener, and it does not serve admission.
        for (String path : new String[] {"mutate", "validate"}) {
            given().contentType("application/json").body(REVIEW).post(new URL(management, "/" + path).toString()).then().statusCode(404);
        }
    }

    /**
     * A pod whose envFrom may make an NVIDIA toolkit variable needs its ConfigMap read, a blocking call: answered from
     * a worker thread (here no API server answers it, so the pod is refused with the reason, never admitted).
     */
    @Test
    void aReviewThatNeedsAConfigMapReadIsAnsweredOffTheEventLoop() {
        String envFrom = REVIEW.replace("\"image\":\"nginx\"", "\"image\":\"nginx\",\"envFrom\":[{\"configMapRef\":{\"name\":\"cfg\"}}]");
        for (String endpoint : new String[] {"validate", "validate-uncovered"}) {
            String answer = given().relaxedHTTPSValidation().contentType("application/json").body(envFrom)
                    .post(https + endpoint).then().statusCode(200).extract().asString();
            assertThat(answer).contains("\"allowed\":false").contains("envFrom[0]=configMapRef cfg with prefix")
                    .contains("it could not: ").doesNotContain("event loop");
        }
        assertThat(WebhookResource.mayReadConfigMaps(envFrom.getBytes(java.nio.charset.StandardCharsets.UTF_8))).isTrue();
        assertThat(WebhookResource.mayReadConfigMaps(REVIEW.getBytes(java.nio.charset.StandardCharsets.UTF_8))).isFalse();
        assertThat(WebhookResource.mayReadConfigMaps("{\"env\\u0046rom\":1}".getBytes(java.nio.charset.StandardCharsets.UTF_8)))
                .as("a name a JSON escape hides").isTrue();
    }

    @Test
    void theDocumentsMetricListIsWhatIsExported() {
        given().relaxedHTTPSValidation().contentType("application/json").body(REVIEW).post(https + "validate").then()
                .statusCode(200);
        String metrics = given().get(management + "metrics").then().statusCode(200).extract().asString();
        assertThat(metrics).contains("dilu_webhook_reviews_total{endpoint=\"validate-uncovered\",outcome=\"failed\"} 0.0");
        assertThat(DocumentedMetrics.differences(DocumentedMetrics.of(DocumentedMetrics.doc("webhook.md")), metrics,
                "dilu_")).isEmpty();
    }

    @Test
    void aReviewOverTheSizeCapIsDeniedNotFailed() {
        String big = REVIEW.replace("\"image\":\"nginx\"", "\"image\":\"" + "x".repeat(3 * 1024 * 1024) + "\"");
        String answer = given().relaxedHTTPSValidation().contentType("application/json").body(big)
                .post(https + "validate").then().statusCode(200).extract().asString();
        assertThat(answer).contains("\"uid\":\"u-1\"").contains("\"allowed\":false")
                .contains("is not allowed: must be at most 3145728 bytes");
    }
}
