package io.dilu.deviceplugin.kubelet;

import io.dilu.deviceplugin.kubelet.v1beta1.DevicePluginGrpc;
import io.dilu.deviceplugin.kubelet.v1beta1.RegisterRequest;
import java.io.IOException;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/** {@link FakeKubelet} for tests in other packages. */
public final class FakeKubeletAccess implements AutoCloseable {

    private final FakeKubelet kubelet;

    private FakeKubeletAccess(FakeKubelet kubelet) {
        this.kubelet = kubelet;
    }

    public static FakeKubeletAccess start(Path dir) throws IOException {
        return new FakeKubeletAccess(new FakeKubelet(dir));
    }

    /** Waits for the plugin to register (it watches for the kubelet's socket), then connects to it. */
    public DevicePluginGrpc.DevicePluginBlockingStub connectAfterRegistration() throws InterruptedException {
        RegisterRequest registration = kubelet.registrations.poll(20, TimeUnit.SECONDS);
        if (registration == null) {
            throw new AssertionError("the plugin did not register within 20 s");
        }
        return kubelet.connect(registration);
    }

    /** Waits for the plugin's next registration, or fails. */
    public RegisterRequest awaitRegistration() throws InterruptedException {
        RegisterRequest registration = kubelet.registrations.poll(20, TimeUnit.SECONDS);
        if (registration == null) {
            throw new AssertionError("the plugin did not register within 20 s");
        }
        return registration;
    }

    /** Registrations received and not yet awaited. */
    public int pendingRegistrations() {
        return kubelet.registrations.size();
    }

    @Override
    public void close() {
        kubelet.close();
    }
}
