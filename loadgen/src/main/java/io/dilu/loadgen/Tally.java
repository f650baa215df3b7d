package io.dilu.loadgen;

import java.util.Arrays;

/**
 * A load run's counts so far: written by its scheduler thread, read by any (a progress line every few seconds),
 * hence the lock; the dispatcher's own state stays with the scheduler thread.
 */
final class Tally {

    private int due;
    private long sent;
    private long answered;
    private long failed;
    private long endedUnsent;
    private long endedSent;
    private double[] okLatencies = new double[1024];
    private int oks;

    synchronized void due() {
        due++;
    }

    synchronized void sent() {
        sent++;
    }

    synchronized void ended(Outcome outcome, boolean wasSent) {
        if (wasSent) {
            endedSent++;
        } else {
            endedUnsent++;
        }
        if (outcome instanceof Outcome.Answered a) {
            answered++;
            if (outcome.ok()) {
                if (oks == okLatencies.length) {
                    okLatencies = Arrays.copyOf(okLatencies, 2 * oks);
                }
                okLatencies[oks++] = a.latencySeconds();
                return;
            }
        }
        failed++;
    }

    synchronized double[] okLatenciesFrom(int from) {
        return Arrays.copyOfRange(okLatencies, Math.min(from, oks), oks);
    }

    Progress snapshot(double elapsedSeconds) {
        double[] latencies;
        int dueNow;
        long sentNow;
        long answeredNow;
        long failedNow;
        long buffered;
        long inFlight;
        synchronized (this) {
            latencies = Arrays.copyOf(okLatencies, oks);
            dueNow = due;
            sentNow = sent;
            answeredNow = answered;
            failedNow = failed;
            buffered = due - sent - endedUnsent;
            inFlight = sent - endedSent;
        }
        // sorted outside the lock: the scheduler thread should not wait for it
        return new Progress(elapsedSeconds, dueNow, sentNow, answeredNow, failedNow, buffered, inFlight,
                LoadResult.percentileOfUnsorted(latencies, 0.95));
    }
}
