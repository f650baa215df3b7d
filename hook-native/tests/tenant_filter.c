/*
 * A tenant's filter library (linked --filter=libcuda.so.1: DT_FILTER). It defines nothing of the driver's, but
 * preloaded ahead of the hook it brings libcuda, its filtee, ahead of the hook with it, and every call of the
 * program binds there. The hook stops such a process before it runs (loader_early.c).
 */
__attribute__((visibility("default"))) int tenant_filter(void) {
    return 1;
}
