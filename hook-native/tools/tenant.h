/* What a tenant without CAP_SYS_ADMIN does inside its container before the command runs: a user and mount namespace
 * of its own (unshare -Urm), then "grant" binds a forged grant page read-only over the real one, "preload" an empty
 * file over /etc/ld.so.preload. Exits 125 with a message naming what was refused (tenant.c). */
#ifndef DILU_CONTAIN_TENANT_H
#define DILU_CONTAIN_TENANT_H

void contain_tenant_userns(const char *what);

#endif
