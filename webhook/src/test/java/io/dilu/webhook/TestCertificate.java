package io.dilu.webhook;

import io.dilu.testing.SelfSignedCert;
import io.quarkus.test.common.QuarkusTestResourceLifecycleManager;
import java.nio.file.Files;
import java.util.Map;

/** A fresh serving certificate for the HTTPS-only server under test (it refuses to start without one). */
public class TestCertificate implements QuarkusTestResourceLifecycleManager {

    @Override
    public Map<String, String> start() {
        try {
            SelfSignedCert cert = SelfSignedCert.create(Files.createTempDirectory("dilu-webhook-test-tls"));
            return Map.of("quarkus.http.ssl.certificate.files", cert.cert().toString(),
                    "quarkus.http.ssl.certificate.key-files", cert.key().toString());
        } catch (Exception e) {
            throw new IllegalStateException("cannot make a test certificate", e);
        }
    }

    @Override
    public void stop() {
        // The temporary files go with the JVM's temporary directory.
    }
}
