/*
 * dilu-contain: runs a command the way the kubelet runs a GPU container with a Dilu share — in a mount
 * namespace of its own where the control block's two pages are mounted at DILU_CONTROL_PATH (the grant page
 * read-only) and /etc/ld.so.preload names the hook — so tests and benchmarks exercise the production hook
 * on this machine without a kubelet. Root gets a plain mount namespace; anyone else a user namespace too.
 * Test and benchmark tool: it is not shipped in images.
 *
 *   dilu-contain [--control DIR | --control-copy DIR | --control-writable DIR] [--preload LIB]
 *                [--neighbours DIR] [--seccomp runtime-default] [--tenant-userns grant|preload] -- COMMAND ...
 *
 * --control mounts DIR/grant read-only and DIR/report read-write (and DIR/cycle read-write, where an SLO
 * container's block has one), as Allocate does; --neighbours mounts DIR read-only where the hook looks for its SLO
 * neighbours' cycle pages; --control-copy puts copies
 * of the pages there without mounting them (a tenant's image shipping its own block); --control-writable
 * mounts the grant page read-write (a block that is not protected). --seccomp runtime-default gives the command
 * the namespace rules of the runtime's default seccomp profile, as the webhook gives GPU pods (seccomp.c).
 * --tenant-userns then plays a tenant that makes a user and mount namespace of its own inside the container and
 * mounts a forged grant page or an empty /etc/ld.so.preload there (tenant.c).
 *
 * As root the command runs in the initial user namespace, as a GPU pod's container does. Anyone else gets a user
 * namespace too, in which the hook refuses CUDA (docs/hook.md, "User namespaces"): CUDA under the hook needs
 * root here.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dilu_control.h"
#include "seccomp.h"
#include "steps.h"
#include "tenant.h"

static void enter_namespace(void) {
    uid_t uid = getuid();
    gid_t gid = getgid();
    if (geteuid() == 0) {
        if (unshare(CLONE_NEWNS) != 0) {
            contain_die("unshare(CLONE_NEWNS)");
        }
    } else {
        if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
            contain_die("unshare(CLONE_NEWUSER | CLONE_NEWNS)");
        }
        contain_map_root(uid, gid);
    }
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
        contain_die("making / private");
    }
}

/* A fresh tmpfs at the deepest existing ancestor of the control path, so the path can be created in it. */
static void make_control_dir(void) {
    char path[512];
    snprintf(path, sizeof(path), "%s", DILU_CONTROL_PATH);
    struct stat st;
    while (stat(path, &st) != 0) {
        char *slash = strrchr(path, '/');
        if (slash == NULL || slash == path) {
            snprintf(path, sizeof(path), "/");
            break;
        }
        *slash = '\0';
    }
    if (mount("dilu-contain", path, "tmpfs", 0, "mode=0755") != 0) {
        contain_die("mounting a tmpfs for the control path");
    }
    contain_mkdirs(DILU_CONTROL_PATH);
}

static void bind_file(const char *from, const char *to, int read_only) {
    contain_write_file(to, "");
    if (mount(from, to, NULL, MS_BIND, NULL) != 0) {
        contain_die(from);
    }
    if (read_only && mount(NULL, to, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL) != 0) {
        contain_die("remounting the grant page read-only");
    }
}

static void copy_file(const char *from, const char *to) {
    int in = open(from, O_RDONLY | O_CLOEXEC), out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (in < 0 || out < 0) {
        contain_die(from);
    }
    char buf[65536];
    ssize_t n;
    while ((n = read(in, buf, sizeof(buf))) > 0) {
        if (write(out, buf, (size_t)n) != n) {
            contain_die(to);
        }
    }
    if (n < 0 || close(in) != 0 || close(out) != 0) {
        contain_die(from);
    }
}

static void place_control(const char *mode, const char *dir) {
    char grant[1024], report[1024], to_grant[600], to_report[600];
    snprintf(grant, sizeof(grant), "%s/%s", dir, DILU_GRANT_FILE);
    snprintf(report, sizeof(report), "%s/%s", dir, DILU_REPORT_FILE);
    snprintf(to_grant, sizeof(to_grant), "%s/%s", DILU_CONTROL_PATH, DILU_GRANT_FILE);
    snprintf(to_report, sizeof(to_report), "%s/%s", DILU_CONTROL_PATH, DILU_REPORT_FILE);
    if (strcmp(mode, "--control-copy") == 0) {
        copy_file(grant, to_grant);
        copy_file(report, to_report);
        return;
    }
    bind_file(grant, to_grant, strcmp(mode, "--control") == 0);
    bind_file(report, to_report, 0);
    /* An SLO container's cycle page, read-write as the device plugin mounts it, where the block has one. */
    char cycle[1024], to_cycle[600];
    snprintf(cycle, sizeof(cycle), "%s/%s", dir, DILU_CYCLE_FILE);
    snprintf(to_cycle, sizeof(to_cycle), "%s/%s", DILU_CONTROL_PATH, DILU_CYCLE_FILE);
    if (access(cycle, F_OK) == 0) {
        bind_file(cycle, to_cycle, 0);
    }
}

/* The SLO neighbours' cycle pages on the GPU: a directory, read-only, as the device plugin mounts it. */
static void place_neighbours(const char *dir) {
    char to[600];
    snprintf(to, sizeof(to), "%s/%s", DILU_CONTROL_PATH, DILU_NEIGHBOURS_DIR);
    contain_mkdirs(to);
    if (mount(dir, to, NULL, MS_BIND, NULL) != 0) {
        contain_die(dir);
    }
    if (mount(NULL, to, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL) != 0) {
        contain_die("remounting the neighbours directory read-only");
    }
}

/* /etc/ld.so.preload naming the hook, in an overlay over /etc that only this namespace sees. */
static void preload(const char *lib) {
    char upper[600], work[600], line[1024];
    snprintf(upper, sizeof(upper), "%s/.etc-upper", DILU_CONTROL_PATH);
    snprintf(work, sizeof(work), "%s/.etc-work", DILU_CONTROL_PATH);
    contain_mkdirs(upper);
    contain_mkdirs(work);
    char options[1400];
    snprintf(options, sizeof(options), "lowerdir=/etc,upperdir=%s,workdir=%s", upper, work);
    if (mount("overlay", "/etc", "overlay", 0, options) != 0) {
        contain_die("mounting an overlay on /etc for ld.so.preload");
    }
    snprintf(line, sizeof(line), "%s\n", lib);
    contain_write_file("/etc/ld.so.preload", line);
}

static void usage(void) {
    fprintf(stderr, "usage: dilu-contain [--control DIR | --control-copy DIR | --control-writable DIR] [--preload LIB] "
                    "[--neighbours DIR] [--seccomp runtime-default] [--tenant-userns grant|preload] -- COMMAND [ARGS...]\n");
    exit(2);
}

int main(int argc, char **argv) {
    const char *control_mode = NULL, *control_dir = NULL, *lib = NULL, *tenant = NULL, *neighbours = NULL;
    int seccomp = 0;
    int i = 1;
    for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (i + 1 < argc && (strcmp(argv[i], "--control") == 0 || strcmp(argv[i], "--control-copy") == 0 ||
                             strcmp(argv[i], "--control-writable") == 0)) {
            control_mode = argv[i];
            control_dir = argv[++i];
        } else if (i + 1 < argc && strcmp(argv[i], "--preload") == 0) {
            lib = argv[++i];
        } else if (i + 1 < argc && strcmp(argv[i], "--neighbours") == 0) {
            neighbours = argv[++i];
        } else if (i + 1 < argc && strcmp(argv[i], "--seccomp") == 0 && strcmp(argv[i + 1], "runtime-default") == 0) {
            seccomp = 1;
            i++;
        } else if (i + 1 < argc && strcmp(argv[i], "--tenant-userns") == 0) {
            tenant = argv[++i];
        } else {
            usage();
        }
    }
    if (i + 1 >= argc) {
        fprintf(stderr, "dilu-contain: no command after --\n");
        return 2;
    }
    enter_namespace();
    make_control_dir();
    if (control_dir != NULL) {
        place_control(control_mode, control_dir);
    }
    if (neighbours != NULL) {
        place_neighbours(neighbours);
    }
    if (lib != NULL) {
        preload(lib);
    }
    /* The container is made; what follows is what runs inside it. */
    if (seccomp) {
        contain_seccomp_runtime_default();
    }
    if (tenant != NULL) {
        contain_tenant_userns(tenant);
    }
    execvp(argv[i + 1], argv + i + 1);
    contain_die(argv[i + 1]);
}
