package io.dilu.trials;

import io.dilu.core.profiling.TrialReport;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.channels.SeekableByteChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A trial run as a process on the emulated GPU, the way the profiler runs one as a pod: the function's command
 * with {@code DILU_BATCH_SIZE} (the batch), {@code DILU_TRIAL_RESULT} (where to write its report) and
 * {@code CUDA_MPS_ACTIVE_THREAD_PERCENTAGE} (the SM share, the emulator's documented spatial limit), waited for
 * at most {@code timeout}, its report read through {@link TrialReport#parse}.
 *
 * <p>Each run gets a fresh directory, and in it an emulated GPU of its own ({@code DILU_EMU_DIR}): nothing else
 * runs on it, and what a failed run leaves behind cannot reach the next. Variables that would change the
 * emulated GPU ({@code DILU_EMU_*}, an inherited {@code CUDA_MPS_*}) are not passed on, so every trial sees the
 * emulator's defaults: an A100's 108 SMs and 40 GiB.
 *
 * <p>A run that cannot start, exits non-zero, outlives the timeout or writes a bad report is a failed trial
 * whose reason names what happened (the exit status and the last line it wrote to stderr, or the report's bad
 * field); it never throws.
 */
public final class ProcessTrial implements ReportingTrial {

    /** The most of a failed run's stderr quoted in its reason. */
    static final int REASON_CHARS = 300;

    private final List<String> command;
    private final Duration timeout;

    public ProcessTrial(List<String> command, Duration timeout) {
        if (command.isEmpty() || timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("a trial needs a command and a positive timeout");
        }
        this.command = List.copyOf(command);
        this.timeout = timeout;
    }

    public List<String> command() {
        return command;
    }

    @Override
    public TrialRun attempt(int smPercent, int batchSize) {
        if (smPercent < 1 || smPercent > 100 || batchSize < 1) {
            throw new IllegalArgumentException("smPercent must be in 1..100 and batchSize >= 1, got " + smPercent + ", " + batchSize);
        }
        Path dir;
        try {
            dir = Files.createTempDirectory("dilu-trial-");
        } catch (IOException e) {
            return TrialRun.failed(smPercent, batchSize, "cannot make the trial's directory: " + e.getMessage());
        }
        try {
            return attempt(dir, smPercent, batchSize);
        } finally {
            delete(dir);
        }
    }

    private TrialRun attempt(Path dir, int sm, int batch) {
        Path result = dir.resolve("result");
        Path stderr = dir.resolve("stderr");
        ProcessBuilder pb = new ProcessBuilder(command)
                .directory(dir.toFile())
                .redirectOutput(dir.resolve("stdout").toFile())
                .redirectError(stderr.toFile());
        Map<String, String> env = pb.environment();
        env.keySet().removeIf(k -> k.startsWith("DILU_EMU_") || k.startsWith("CUDA_MPS_") || k.startsWith("DILU_TRIAL")
                || k.equals(TrialReport.BATCH_SIZE_ENV));
        env.put("DILU_EMU_DIR", dir.toString());
        env.put("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", Integer.toString(sm));
        env.put(TrialReport.BATCH_SIZE_ENV, Integer.toString(batch));
        env.put(TrialReport.RESULT_ENV, result.toString());
        Process p;
        try {
            p = pb.start();
        } catch (IOException e) {
            return TrialRun.failed(sm, batch, "cannot start " + command.getFirst() + ": " + e.getMessage());
        }
        try {
            if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                p.descendants().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly().waitFor();
                return TrialRun.failed(sm, batch, String.format(Locale.ROOT, "did not finish within %.1f s", timeout.toMillis() / 1000.0));
            }
        } catch (InterruptedException e) {
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly();
            Thread.currentThread().interrupt();
            return TrialRun.failed(sm, batch, "interrupted");
        }
        if (p.exitValue() != 0) {
            return TrialRun.failed(sm, batch, "exited with " + p.exitValue() + lastLine(stderr));
        }
        try {
            return TrialRun.reported(sm, batch, TrialReport.parse(readBounded(result)));
        } catch (IllegalArgumentException e) {
            return TrialRun.failed(sm, batch, "bad report: " + e.getMessage());
        } catch (IOException e) {
            return TrialRun.failed(sm, batch, "cannot read its report: " + e.getMessage());
        }
    }

    /**
     * The report's text, at most one character over the limit (so that parse says it is too long), bytes that
     * are not UTF-8 replaced; "" when there is no file.
     */
    static String readBounded(Path file) throws IOException {
        try (InputStream in = Files.newInputStream(file)) {
            String text = new String(in.readNBytes(4 * (TrialReport.MAX_CHARS + 1)), StandardCharsets.UTF_8);
            return text.length() > TrialReport.MAX_CHARS + 1 ? text.substring(0, TrialReport.MAX_CHARS + 1) : text;
        } catch (NoSuchFileException e) {
            return "";
        }
    }

    /** ": " and the last non-blank line of the stderr file's last 4 KiB, clipped and printable; "" when none. */
    private static String lastLine(Path stderr) {
        try (SeekableByteChannel in = Files.newByteChannel(stderr)) {
            long size = in.size();
            ByteBuffer tail = ByteBuffer.allocate((int) Math.min(size, 4096));
            in.position(size - tail.capacity());
            while (tail.hasRemaining() && in.read(tail) > 0) {
                // reads the tail
            }
            String text = new String(tail.array(), 0, tail.position(), StandardCharsets.UTF_8);
            String last = text.lines().filter(l -> !l.isBlank()).reduce((a, b) -> b).orElse("");
            String clean = TrialReport.quoted(last, REASON_CHARS);
            return clean.isEmpty() ? "" : ": " + clean;
        } catch (IOException e) {
            return "";
        }
    }

    private static void delete(Path dir) {
        try (Stream<Path> all = Files.walk(dir)) {
            for (Path p : all.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException e) {
            // A leftover temporary directory is not worth failing a trial for.
        }
    }
}
