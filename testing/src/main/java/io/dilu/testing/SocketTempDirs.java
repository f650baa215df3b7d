package io.dilu.testing;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.extension.AnnotatedElementContext;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.io.TempDirFactory;

/**
 * Temporary directories for tests that bind Unix sockets in them: {@code @TempDir(factory = SocketTempDirs.class)}.
 *
 * <p>A Unix socket's path is limited to 107 bytes, and the build puts other scratch in each module's
 * {@code target/tmp}, whose depth depends on where the repository was cloned; these directories are made
 * directly under {@code /tmp} with a short name, one per test, and JUnit deletes them afterwards.
 */
public final class SocketTempDirs implements TempDirFactory {

    @Override
    public Path createTempDirectory(AnnotatedElementContext element, ExtensionContext extension) throws IOException {
        return create();
    }

    /** A new short-named directory under {@code /tmp}; whoever asks for it deletes it. */
    public static Path create() throws IOException {
        return Files.createTempDirectory(Path.of("/tmp"), "dilu-");
    }
}
