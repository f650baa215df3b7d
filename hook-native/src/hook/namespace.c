/*
 * Whether this process is in the user namespace the container was started in. The container runtime puts a
 * GPU container's processes in the kernel's initial user namespace (pods with a Dilu share run with the
 * host's users), and gives the container no CAP_SYS_ADMIN (the webhook refuses it). A process there cannot
 * make or enter another mount namespace, so the mounts it sees, the grant page's above all, are the ones
 * the runtime and the device plugin made. A tenant that makes a user namespace of its own (unshare -Urm: no
 * capability needed where seccomp allows it) is root there, in a mount namespace it may change at will: it can
 * bind a forged grant page, read-only, over the real one. Inside such a namespace every mount is suspect,
 * so CUDA is refused there.
 *
 * The reference is the kernel's, not the container's: the initial user namespace has a fixed identity
 * (PROC_USER_INIT_INO, 0xEFFFFFFD, since Linux 3.8). A reference recorded from inside the container (pid 1's
 * namespaces, or inode numbers written into the grant page) would be only as good as the page or the process
 * it came from, which is what is in question.
 *
 * And the answer is the kernel's, not a path's: inside its own mount namespace the tenant can mount over
 * /proc, so /proc/self/ns/user may name anything. NS_GET_USERNS (Linux 4.9) asks the kernel for the user
 * namespace owning a namespace, and answers EPERM unless that user namespace is the caller's own or one
 * nested in it. Asked about any namespace whose owner is the initial user namespace, it answers with the
 * initial user namespace for a process there, and EPERM for a process in any other. So: the owner of the
 * namespace behind /proc/self/ns/mnt — whatever file that path really opens — must come back as the
 * initial user namespace. A forged /proc can only make it fail.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hook.h"

#ifndef NS_GET_USERNS
#define NS_GET_USERNS _IO(0xb7, 0x1) /* <linux/nsfs.h>, Linux 4.9 */
#endif
#define INITIAL_USER_NAMESPACE 0xEFFFFFFDul /* PROC_USER_INIT_INO, <linux/proc_ns.h> */

static void close_quietly(int fd) {
    if (close(fd) != 0) {
        hook_log(LOG_WARN, "closing a namespace file: %s", strerror(errno));
    }
}

int hook_initial_user_namespace(char *why, size_t why_len) {
    const char *path = "/proc/self/ns/mnt";
    int ns = open(path, O_RDONLY | O_CLOEXEC);
    if (ns < 0) {
        snprintf(why, why_len, "cannot open %s to check the user namespace: %s", path, strerror(errno));
        return 0;
    }
    int owner = ioctl(ns, NS_GET_USERNS);
    int saved = errno;
    close_quietly(ns);
    if (owner < 0) {
        if (saved == EPERM) {
            snprintf(why, why_len, "the process is not in the initial user namespace (a user namespace made inside "
                     "the container: the mounts it sees are not the node's)");
        } else {
            snprintf(why, why_len, "cannot ask the kernel which user namespace owns %s (NS_GET_USERNS, Linux 4.9): %s",
                     path, strerror(saved));
        }
        return 0;
    }
    /* The inode number from fstat, the kernel's: not fstat(), which glibc before 2.33 does not export
     * (glibc_floor.h), and not readlink of a path, which the tenant may have mounted over. */
    struct stat st;
    long rc = syscall(SYS_fstat, owner, &st);
    saved = errno;
    close_quietly(owner);
    if (rc != 0) {
        snprintf(why, why_len, "cannot read the user namespace's identity: %s", strerror(saved));
        return 0;
    }
    if ((unsigned long)st.st_ino != INITIAL_USER_NAMESPACE) {
        snprintf(why, why_len, "the process is not in the initial user namespace (it is in user namespace %lu, made "
                 "inside the container: the mounts it sees are not the node's)", (unsigned long)st.st_ino);
        return 0;
    }
    return 1;
}
