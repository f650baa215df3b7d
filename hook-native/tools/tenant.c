/*
 * What a tenant with no capabilities can do inside its container where seccomp allows it (issue 29, cause 3):
 * make a user namespace of its own, and with it a mount namespace (unshare -Urm), where it is root and may
 * mount what it likes over what the runtime mounted:
 *
 *   grant    a forged grant page (unlimited tokens, not throttled, 8,000 MiB of memory), on a tmpfs of its own,
 *            bound read-only over the real one: the hook's read-only-mount check alone would accept it;
 *   preload  an empty file over /etc/ld.so.preload: a process started there does not load the hook at all.
 *
 * Then dilu-contain runs the command there. Where a step is refused (the RuntimeDefault seccomp profile refuses
 * unshare), it says so and exits 125, as the tenant's script would fail there.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dilu_control.h"
#include "steps.h"
#include "tenant.h"

/* The capabilities container runtimes give a container by default (containerd's and Docker's): no CAP_SYS_ADMIN,
 * which the webhook refuses anyway. Enough to map root in a user namespace of one's own (CAP_SETFCAP), as a
 * root tenant can; a tenant that is not root maps its own uid, and needs none. */
static const int runtime_default_capabilities[] = {CAP_CHOWN,    CAP_DAC_OVERRIDE,     CAP_FSETID,     CAP_FOWNER,
                                                   CAP_MKNOD,    CAP_NET_RAW,          CAP_SETGID,     CAP_SETUID,
                                                   CAP_SETFCAP,  CAP_SETPCAP,          CAP_NET_BIND_SERVICE,
                                                   CAP_SYS_CHROOT, CAP_KILL,           CAP_AUDIT_WRITE};

/* The tests run dilu-contain as root: the tenant gets the container's capabilities, not root's. */
static void container_capabilities(void) {
    uint64_t keep = 0;
    for (size_t i = 0; i < sizeof(runtime_default_capabilities) / sizeof(runtime_default_capabilities[0]); i++) {
        keep |= 1ull << runtime_default_capabilities[i];
    }
    for (int cap = 0; cap <= 63; cap++) {
        if ((keep & (1ull << cap)) == 0 && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) {
            contain_die("dropping a capability from the bounding set");
        }
    }
    struct __user_cap_header_struct header = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct caps[2];
    if (syscall(SYS_capget, &header, caps) != 0) {
        contain_die("reading the capabilities");
    }
    for (int word = 0; word < 2; word++) {
        uint32_t mask = (uint32_t)(keep >> (32 * word));
        caps[word].effective &= mask;
        caps[word].permitted &= mask;
        caps[word].inheritable &= mask;
    }
    if (syscall(SYS_capset, &header, caps) != 0) {
        contain_die("dropping the capabilities a container does not get");
    }
}

static void refused(const char *step) {
    fprintf(stderr, "dilu-contain: the tenant's %s was refused: %s\n", step, strerror(errno));
    exit(125);
}

/* unshare -Urm: root in a user namespace of one's own, in a mount namespace of one's own. */
static void own_namespaces(void) {
    uid_t uid = getuid();
    gid_t gid = getgid();
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
        refused("unshare(CLONE_NEWUSER | CLONE_NEWNS)");
    }
    contain_map_root(uid, gid);
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
        refused("mount --make-rprivate /");
    }
}

/* A tmpfs of the tenant's own, for its files. */
static const char *tenant_dir(void) {
    static char dir[512];
    snprintf(dir, sizeof(dir), "%s/.tenant", DILU_CONTROL_PATH);
    contain_mkdirs(dir);
    if (mount("tenant", dir, "tmpfs", 0, "mode=0755") != 0) {
        refused("mount -t tmpfs");
    }
    return dir;
}

/* A copy of the real grant page that grants everything. */
static void forge_grant(const char *real, const char *forged) {
    int in = open(real, O_RDONLY | O_CLOEXEC);
    int out = open(forged, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    dilu_grant_page page;
    if (in < 0 || out < 0 || read(in, &page, sizeof(page)) != (ssize_t)sizeof(page) || close(in) != 0) {
        contain_die("copying the grant page");
    }
    page.heartbeat_ns = UINT64_MAX / 2;
    for (int d = 0; d < DILU_MAX_DEVICES; d++) {
        page.device[d].tokens_granted = UINT64_MAX / 2;
        page.device[d].throttled = 0;
        page.device[d].memory_limit_bytes = 8000ull << 20;
    }
    if (write(out, &page, sizeof(page)) != (ssize_t)sizeof(page) || close(out) != 0) {
        contain_die("writing the forged grant page");
    }
}

static void bind_over(const char *from, const char *to, int read_only) {
    if (mount(from, to, NULL, MS_BIND, NULL) != 0) {
        refused("mount --bind");
    }
    if (read_only && mount(NULL, to, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL) != 0) {
        refused("mount -o remount,bind,ro");
    }
}

void contain_tenant_userns(const char *what) {
    int grant = strcmp(what, "grant") == 0;
    if (!grant && strcmp(what, "preload") != 0) {
        fprintf(stderr, "dilu-contain: --tenant-userns takes grant or preload, not %s\n", what);
        exit(2);
    }
    container_capabilities();
    own_namespaces();
    const char *dir = tenant_dir();
    char path[600], target[600];
    if (grant) {
        snprintf(path, sizeof(path), "%s/grant", dir);
        snprintf(target, sizeof(target), "%s/%s", DILU_CONTROL_PATH, DILU_GRANT_FILE);
        forge_grant(target, path);
        bind_over(path, target, 1);
    } else {
        snprintf(path, sizeof(path), "%s/ld.so.preload", dir);
        contain_write_file(path, "");
        bind_over(path, "/etc/ld.so.preload", 0);
    }
}
