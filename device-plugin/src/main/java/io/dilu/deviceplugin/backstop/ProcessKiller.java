package io.dilu.deviceplugin.backstop;

import java.util.Optional;
import java.util.OptionalLong;
import org.jboss.logging.Logger;

/**
 * Ends a process the backstop found at fault, and only that process. Between the reading that found it and the kill,
 * the process may have ended and its pid gone to another — possibly in another container. So the kill goes through a
 * pidfd: {@code pidfd_open} pins the process the pid names now; then its start time and its container are read again
 * and must be those of the process at fault; only then {@code pidfd_send_signal} sends SIGKILL, which reaches the
 * pinned process or nobody, never a later holder of the pid. On a kernel without pidfds (before 5.3) the same checks
 * come before a plain kill(2), which leaves a window of microseconds instead of none.
 */
public class ProcessKiller {

    private static final Logger LOG = Logger.getLogger(ProcessKiller.class);

    /** What came of a kill. */
    public enum Outcome {
        /** SIGKILL was sent to the process at fault. */
        KILLED,
        /** The process at fault is gone, or its pid now names another process or one in another container. */
        GONE,
        /** The kill was refused or failed (no permission, no libc). */
        FAILED;

        public String label() {
            return name().toLowerCase(java.util.Locale.ROOT);
        }
    }

    private final ProcFs proc;

    public ProcessKiller(ProcFs proc) {
        this.proc = proc;
    }

    /**
     * @param startTicks the start time the process at fault had
     * @param container its container when it was found at fault; empty for a process of no container
     */
    public Outcome kill(long pid, long startTicks, Optional<Cgroups.ContainerId> container) {
        LibC c;
        try {
            c = LibC.INSTANCE;
        } catch (UnsatisfiedLinkError e) {
            LOG.warnf("cannot end pid %d: no libc through JNA (%s)", pid, e.getMessage());
            return Outcome.FAILED;
        }
        long pidfd = c.syscall(LibC.SYS_PIDFD_OPEN, pid, 0L);
        int error = pidfd < 0 ? com.sun.jna.Native.getLastError() : 0;
        if (pidfd < 0 && error == LibC.ESRCH) {
            return Outcome.GONE;
        }
        try {
            if (!same(pid, startTicks, container)) {
                return Outcome.GONE;
            }
            if (pidfd >= 0) {
                long rc = c.syscall(LibC.SYS_PIDFD_SEND_SIGNAL, pidfd, (long) LibC.SIGKILL, 0L, 0L);
                if (rc == 0) {
                    return Outcome.KILLED;
                }
                int e = com.sun.jna.Native.getLastError();
                if (e == LibC.ESRCH) {
                    return Outcome.GONE;
                }
                LOG.warnf("cannot end pid %d: pidfd_send_signal failed with errno %d", pid, e);
                return Outcome.FAILED;
            }
            if (error != LibC.ENOSYS) {
                LOG.warnf("cannot end pid %d: pidfd_open failed with errno %d", pid, error);
                return Outcome.FAILED;
            }
            // No pidfds (Linux < 5.3): checked just before, sent at once.
            if (c.kill((int) pid, LibC.SIGKILL) == 0) {
                return Outcome.KILLED;
            }
            int e = com.sun.jna.Native.getLastError();
            return e == LibC.ESRCH ? Outcome.GONE : Outcome.FAILED;
        } finally {
            if (pidfd >= 0) {
                c.close((int) pidfd);
            }
        }
    }

    /**
     * Whether {@code pid} still names the process at fault, running: the same start time, the same container, not
     * ended (a process killed a round ago may linger, unreaped, while the GPU still lists it: a second SIGKILL would
     * count a kill that did nothing).
     */
    boolean same(long pid, long startTicks, Optional<Cgroups.ContainerId> container) {
        OptionalLong start = proc.startTicks(pid);
        return start.isPresent() && start.getAsLong() == startTicks && !proc.ended(pid)
                && proc.container(pid).equals(container);
    }
}
