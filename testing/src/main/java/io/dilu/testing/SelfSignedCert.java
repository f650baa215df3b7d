package io.dilu.testing;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A self-signed serving certificate for 127.0.0.1, made with the openssl command line, as PEM files: what a
 * webhook needs to be called by the API server over HTTPS in a test.
 */
public record SelfSignedCert(Path cert, Path key) {

    public static SelfSignedCert create(Path dir) throws IOException, InterruptedException {
        Path cert = dir.resolve("tls.crt");
        Path key = dir.resolve("tls.key");
        Process p = new ProcessBuilder(List.of("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
                "-keyout", key.toString(), "-out", cert.toString())).redirectErrorStream(true).start();
        String output = new String(p.getInputStream().readAllBytes());
        if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IllegalStateException("openssl could not make a certificate: " + output);
        }
        return new SelfSignedCert(cert, key);
    }

    /** The certificate as a webhook configuration's {@code caBundle}. */
    public String caBundle() throws IOException {
        return Base64.getEncoder().encodeToString(Files.readAllBytes(cert));
    }

    /** An SSL context that trusts only this certificate, for clients in tests and benchmarks. */
    public javax.net.ssl.SSLContext trustingContext() throws Exception {
        var factory = java.security.cert.CertificateFactory.getInstance("X.509");
        java.security.cert.Certificate certificate;
        try (var in = Files.newInputStream(cert)) {
            certificate = factory.generateCertificate(in);
        }
        var store = java.security.KeyStore.getInstance(java.security.KeyStore.getDefaultType());
        store.load(null, null);
        store.setCertificateEntry("dilu", certificate);
        var trust = javax.net.ssl.TrustManagerFactory.getInstance(javax.net.ssl.TrustManagerFactory.getDefaultAlgorithm());
        trust.init(store);
        var context = javax.net.ssl.SSLContext.getInstance("TLS");
        context.init(null, trust.getTrustManagers(), null);
        return context;
    }
}
