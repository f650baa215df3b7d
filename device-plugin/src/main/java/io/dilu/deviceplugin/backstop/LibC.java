package io.dilu.deviceplugin.backstop;

import com.sun.jna.Library;
import com.sun.jna.Native;

/** The few libc calls the backstop makes that Java has no safe form of (JNA, as the agent loads NVML). */
interface LibC extends Library {

    LibC INSTANCE = Native.load("c", LibC.class);

    int O_RDONLY = 0;
    int O_NONBLOCK = 0x800;
    int O_CLOEXEC = 0x80000;
    /** Differs between architectures: 0400000 on x86-64, 0100000 on arm64. */
    int O_NOFOLLOW = "aarch64".equals(System.getProperty("os.arch")) ? 0x8000 : 0x20000;

    /** pidfd_open and pidfd_send_signal: the same number on every architecture (added after the tables merged). */
    long SYS_PIDFD_SEND_SIGNAL = 424;
    long SYS_PIDFD_OPEN = 434;
    int SIGKILL = 9;
    int ESRCH = 3;
    int ENOSYS = 38;

    int open(String path, int flags);

    long pread(int fd, byte[] buffer, long count, long offset);

    int close(int fd);

    int kill(int pid, int signal);

    /** Arguments as longs: the kernel reads each as a register's width. */
    long syscall(long number, Object... args);
}
