/*
 * The emulated driver's graphs, stream capture, arrays and virtual memory management, without the hook:
 * what runs is counted by the emulated GPU (diluEmuProcessStats), memory by cuMemGetInfo. No timing.
 */
#define _GNU_SOURCE
#include <string.h>

#include "../workloads/workload.h"
#include "dilu_emu.h"
#include "expect.h"

#define MIB (1ull << 20)

static CUfunction f;
static CUmodule module;

static unsigned long long ran(void) {
    dilu_emu_stats own;
    CHECK(cuCtxSynchronize());
    CHECK(diluEmuProcessStats(0, &own));
    return (unsigned long long)own.blocks;
}

static unsigned long long ran_on(CUstream s) {
    dilu_emu_stats own;
    CHECK(cuStreamSynchronize(s));
    CHECK(diluEmuProcessStats(0, &own));
    return (unsigned long long)own.blocks;
}

static unsigned long long used(void) {
    size_t free_bytes, total;
    CHECK(cuMemGetInfo_v2(&free_bytes, &total));
    return (unsigned long long)(total - free_bytes);
}

static CUDA_KERNEL_NODE_PARAMS_v2 kernel(unsigned blocks) {
    CUDA_KERNEL_NODE_PARAMS_v2 p;
    memset(&p, 0, sizeof(p));
    p.func = f;
    p.gridDimX = blocks;
    p.gridDimY = p.gridDimZ = p.blockDimX = p.blockDimY = p.blockDimZ = 1;
    return p;
}

static CUgraphNode add(CUgraph g, unsigned blocks) {
    CUDA_KERNEL_NODE_PARAMS_v2 p = kernel(blocks);
    CUgraphNode n;
    CHECK(cuGraphAddKernelNode_v2(&n, g, NULL, 0, &p));
    return n;
}

static size_t count(CUgraph g) {
    size_t n = 0;
    CHECK(cuGraphGetNodes(g, NULL, &n));
    return n;
}

static unsigned long long launch(CUgraphExec e) {
    unsigned long long before = ran();
    CHECK(cuGraphLaunch(e, NULL));
    return ran() - before;
}

static void test_graphs(void) {
    CUgraph g, child, inner;
    CHECK(cuGraphCreate(&g, 0));
    CHECK(cuGraphCreate(&child, 0));
    add(child, 20);
    CHECK(cuGraphAddEmptyNode(NULL, child, NULL, 0));
    CUgraphNode a = add(g, 10), c, b, e;
    CHECK(cuGraphAddChildGraphNode(&c, g, NULL, 0, child));
    CUDA_KERNEL_NODE_PARAMS_v2 k30 = kernel(30);
    CUDA_KERNEL_NODE_PARAMS_v1 k30v1;
    memcpy(&k30v1, &k30, sizeof(k30v1));
    CHECK(cuGraphAddKernelNode(&b, g, NULL, 0, &k30v1));
    CHECK(cuGraphAddEmptyNode(&e, g, NULL, 0));
    EXPECT(count(g) == 4, "4 nodes, got %zu", count(g));
    CUgraphNode nodes[6];
    size_t n = 6;
    CHECK(cuGraphGetNodes(g, nodes, &n));
    EXPECT(n == 4 && nodes[0] == a && nodes[1] == c && nodes[2] == b && nodes[3] == e && nodes[4] == NULL,
           "cuGraphGetNodes: %zu nodes in the order added, the rest NULL", n);
    CUgraphNodeType types[4];
    for (int i = 0; i < 4; i++) {
        CHECK(cuGraphNodeGetType(nodes[i], &types[i]));
    }
    EXPECT(types[0] == CU_GRAPH_NODE_TYPE_KERNEL && types[1] == CU_GRAPH_NODE_TYPE_GRAPH &&
           types[2] == CU_GRAPH_NODE_TYPE_KERNEL && types[3] == CU_GRAPH_NODE_TYPE_EMPTY, "node types");
    CUDA_KERNEL_NODE_PARAMS_v1 got;
    CHECK(cuGraphKernelNodeGetParams(b, &got));
    EXPECT(got.gridDimX == 30 && got.func == f, "a v1 node reads back: %u", got.gridDimX);
    CHECK(cuGraphChildGraphNodeGetGraph(c, &inner));
    EXPECT(inner != child && count(inner) == 2, "a child graph node holds a copy of the child");
    EXPECT(cuGraphDestroy(inner) == CUDA_ERROR_INVALID_VALUE, "a node's own graph is destroyed with the node");

    CUgraphExec exec;
    CHECK(cuGraphInstantiateWithFlags(&exec, g, 0));
    CUDA_KERNEL_NODE_PARAMS_v2 k1000 = kernel(1000);
    CHECK(cuGraphKernelNodeSetParams_v2(a, &k1000)); /* after instantiation: the executable graph keeps 10 */
    EXPECT(launch(exec) == 60, "the executable graph runs what was instantiated: 10 + 20 + 30");
    CUDA_KERNEL_NODE_PARAMS_v2 k100 = kernel(100);
    CHECK(cuGraphExecKernelNodeSetParams_v2(exec, a, &k100));
    EXPECT(launch(exec) == 150, "exec kernel node set");
    CUgraph child5;
    CHECK(cuGraphCreate(&child5, 0));
    add(child5, 5);
    CHECK(cuGraphAddEmptyNode(NULL, child5, NULL, 0));
    CHECK(cuGraphExecChildGraphNodeSetParams(exec, c, child5));
    EXPECT(launch(exec) == 135, "exec child graph set");
    CUgraph wrong_child;
    CHECK(cuGraphCreate(&wrong_child, 0));
    add(wrong_child, 1);
    EXPECT(cuGraphExecChildGraphNodeSetParams(exec, c, wrong_child) == CUDA_ERROR_INVALID_VALUE,
           "a child graph of another topology is refused");
    EXPECT(cuGraphExecKernelNodeSetParams_v2(exec, c, &k100) == CUDA_ERROR_INVALID_VALUE,
           "kernel parameters for a child graph node are refused");

    /* Updates: the same topology with other sizes; another topology; another node type. */
    CUgraph g2;
    CHECK(cuGraphCreate(&g2, 0));
    add(g2, 1);
    CHECK(cuGraphAddChildGraphNode(NULL, g2, NULL, 0, child5));
    add(g2, 3);
    CHECK(cuGraphAddEmptyNode(NULL, g2, NULL, 0));
    CUgraphExecUpdateResultInfo info;
    CHECK(cuGraphExecUpdate_v2(exec, g2, &info));
    EXPECT(info.result == CU_GRAPH_EXEC_UPDATE_SUCCESS && launch(exec) == 9, "updated: 1 + 5 + 3");
    CUgraphNode error_node;
    CUgraphExecUpdateResult result;
    EXPECT(cuGraphExecUpdate(exec, child5, &error_node, &result) == CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE &&
               result == CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED,
           "another topology: %d", (int)result);
    CUgraph g3;
    CHECK(cuGraphCreate(&g3, 0));
    add(g3, 1);
    add(g3, 2); /* a kernel where the child graph was */
    add(g3, 3);
    CHECK(cuGraphAddEmptyNode(NULL, g3, NULL, 0));
    EXPECT(cuGraphExecUpdate_v2(exec, g3, &info) == CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE &&
               info.result == CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED,
           "another node type: %d", (int)info.result);
    EXPECT(launch(exec) == 9, "a refused update changes nothing");
    CHECK(cuGraphExecKernelNodeSetParams_v2(exec, a, &k100)); /* nodes keep the handles of the first graph */
    EXPECT(launch(exec) == 108, "after an update, nodes are still named by the instantiated graph's handles");
    CUgraphNodeParams np;
    memset(&np, 0, sizeof(np));
    np.type = CU_GRAPH_NODE_TYPE_KERNEL;
    np.kernel = kernel(7);
    CHECK(cuGraphExecNodeSetParams(exec, b, &np));
    EXPECT(launch(exec) == 112, "exec node set (generic)");

    CHECK(cuGraphDestroyNode(e));
    EXPECT(count(g) == 3, "a destroyed node is gone");
    CHECK(cuGraphExecDestroy(exec));
    CUgraph graphs[] = {g, child, child5, wrong_child, g2, g3};
    for (size_t i = 0; i < sizeof(graphs) / sizeof(graphs[0]); i++) {
        CHECK(cuGraphDestroy(graphs[i]));
    }
}

static void test_capture(void) {
    CUstream s, other;
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));
    CUstreamCaptureStatus status;
    EXPECT(cuStreamBeginCapture_v2(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
           "the legacy stream cannot capture");
    CUgraph small;
    CUgraphExec small_exec;
    CHECK(cuGraphCreate(&small, 0));
    add(small, 4);
    CHECK(cuGraphInstantiateWithFlags(&small_exec, small, 0));

    unsigned long long before = ran();
    CHECK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    EXPECT(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_ERROR_ILLEGAL_STATE, "already capturing");
    CHECK(cuStreamIsCapturing(s, &status));
    EXPECT(status == CU_STREAM_CAPTURE_STATUS_ACTIVE, "capturing: %d", (int)status);
    CHECK(cuLaunchKernel(f, 10, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
    CHECK(cuLaunchKernel_ptsz(f, 20, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
    CHECK(cuGraphLaunch(small_exec, s));
    CHECK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, other, NULL, NULL)); /* another stream runs as usual */
    EXPECT(ran_on(other) - before == 1, "captured kernels do not run: %llu blocks ran", ran_on(other) - before);
    CUgraph g;
    CHECK(cuStreamEndCapture(s, &g));
    CHECK(cuStreamIsCapturing(s, &status));
    EXPECT(status == CU_STREAM_CAPTURE_STATUS_NONE, "ended: %d", (int)status);
    EXPECT(cuStreamEndCapture(s, &g) == CUDA_ERROR_ILLEGAL_STATE, "no capture to end");
    CUgraphNode nodes[3];
    size_t n = 3;
    CUgraphNodeType last;
    CHECK(cuGraphGetNodes(g, nodes, &n));
    CHECK(cuGraphNodeGetType(nodes[2], &last));
    EXPECT(n == 3 && last == CU_GRAPH_NODE_TYPE_GRAPH, "two kernels and a child graph captured: %zu", n);
    CUgraphExec e;
    CHECK(cuGraphInstantiateWithFlags(&e, g, 0));
    EXPECT(launch(e) == 34, "the captured graph runs 10 + 20 + 4");

    /* Invalidation: a synchronisation during capture. */
    CHECK(cuStreamBeginCapture(s));
    EXPECT(cuStreamSynchronize(s) == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "no synchronisation while capturing");
    CHECK(cuStreamIsCapturing(s, &status));
    EXPECT(status == CU_STREAM_CAPTURE_STATUS_INVALIDATED, "invalidated: %d", (int)status);
    EXPECT(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL) == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
           "launches onto an invalidated capture fail");
    CUgraph none = (CUgraph)&none;
    EXPECT(cuStreamEndCapture(s, &none) == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED && none == NULL,
           "an invalidated capture ends without a graph");

    /* Into an existing graph; and a stream destroyed while capturing. */
    CUgraph into;
    CHECK(cuGraphCreate(&into, 0));
    add(into, 2);
    CHECK(cuStreamBeginCaptureToGraph(s, into, NULL, NULL, 0, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK(cuLaunchKernel(f, 3, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
    CUgraph out;
    CHECK(cuStreamEndCapture(s, &out));
    EXPECT(out == into && count(into) == 2, "captured into the given graph");
    CUstream doomed;
    CHECK(cuStreamCreate(&doomed, 0));
    CHECK(cuStreamBeginCapture_v2(doomed, CU_STREAM_CAPTURE_MODE_RELAXED));
    CHECK(cuStreamDestroy_v2(doomed));
    before = ran();
    CHECK(cuLaunchKernel(f, 5, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
    EXPECT(ran() - before == 5, "after everything captured ended, launches run");

    CHECK(cuGraphExecDestroy(e));
    CHECK(cuGraphExecDestroy(small_exec));
    CHECK(cuGraphDestroy(g));
    CHECK(cuGraphDestroy(small));
    CHECK(cuGraphDestroy(into));
    CHECK(cuStreamDestroy_v2(s));
    CHECK(cuStreamDestroy_v2(other));
}

/* Memory nodes, added and captured, as CUDA makes them; they run nothing and take no emulated memory. */
static void test_memory_nodes(void) {
    unsigned long long base = used();
    CUgraph g;
    CHECK(cuGraphCreate(&g, 0));
    CUDA_MEM_ALLOC_NODE_PARAMS ap;
    memset(&ap, 0, sizeof(ap));
    ap.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    ap.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    ap.bytesize = 64 * MIB;
    CUgraphNode alloc, freed, k = add(g, 3);
    CHECK(cuGraphAddMemAllocNode(&alloc, g, &k, 1, &ap));
    EXPECT(ap.dptr != 0, "an allocation node returns its address");
    CUDA_MEM_ALLOC_NODE_PARAMS got;
    CHECK(cuGraphMemAllocNodeGetParams(alloc, &got));
    EXPECT(got.bytesize == 64 * MIB && got.dptr == ap.dptr, "the allocation node reads back: %zu", got.bytesize);
    CHECK(cuGraphAddMemFreeNode(&freed, g, &alloc, 1, ap.dptr));
    CUdeviceptr back = 0;
    CHECK(cuGraphMemFreeNodeGetParams(freed, &back));
    EXPECT(back == ap.dptr, "the free node reads back");
    CUgraphNodeType types[2];
    CHECK(cuGraphNodeGetType(alloc, &types[0]));
    CHECK(cuGraphNodeGetType(freed, &types[1]));
    EXPECT(types[0] == CU_GRAPH_NODE_TYPE_MEM_ALLOC && types[1] == CU_GRAPH_NODE_TYPE_MEM_FREE, "memory node types");
    CUdeviceptr plain;
    CHECK(cuMemAlloc_v2(&plain, MIB));
    EXPECT(cuGraphAddMemFreeNode(NULL, g, NULL, 0, plain) == CUDA_ERROR_INVALID_VALUE,
           "a free node of an address no allocation node returned");
    CUgraphNodeParams np;
    memset(&np, 0, sizeof(np));
    np.type = CU_GRAPH_NODE_TYPE_MEM_ALLOC;
    np.alloc.poolProps = ap.poolProps;
    np.alloc.bytesize = MIB;
    CHECK(cuGraphAddNode(NULL, g, NULL, 0, &np));
    EXPECT(np.alloc.dptr != 0 && np.alloc.dptr != ap.dptr, "cuGraphAddNode's allocation node has its own address");
    EXPECT(used() == base + MIB, "graph allocations take no memory until they run: %llu", used() - base);
    CUgraph parent;
    CHECK(cuGraphCreate(&parent, 0));
    EXPECT(cuGraphAddChildGraphNode(NULL, parent, NULL, 0, g) == CUDA_ERROR_INVALID_VALUE,
           "a graph with memory nodes cannot be cloned into a child graph node");
    CUgraphExec e;
    CHECK(cuGraphInstantiateWithFlags(&e, g, 0));
    EXPECT(launch(e) == 3 && used() == base + MIB, "the executable graph runs its kernel; memory nodes run nothing");
    CHECK(cuGraphExecDestroy(e));

    /* Captured: cuMemAllocAsync and cuMemFreeAsync become nodes; a free of ordinary memory is refused. */
    CUstream s;
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CUdeviceptr p = 0, q = 0;
    CHECK(cuMemAllocAsync(&p, 32 * MIB, s));
    CHECK(cuMemAllocFromPoolAsync_ptsz(&q, 32 * MIB, NULL, s));
    CHECK(cuMemFreeAsync(p, s));
    EXPECT(cuMemFreeAsync(plain, s) == CUDA_ERROR_INVALID_VALUE, "a captured free of memory allocated outside");
    CUgraph captured;
    CHECK(cuStreamEndCapture(s, &captured));
    CUgraphNode nodes[3];
    size_t n = 3;
    CHECK(cuGraphGetNodes(captured, nodes, &n));
    CHECK(cuGraphNodeGetType(nodes[0], &types[0]));
    CHECK(cuGraphNodeGetType(nodes[2], &types[1]));
    EXPECT(n == 3 && types[0] == CU_GRAPH_NODE_TYPE_MEM_ALLOC && types[1] == CU_GRAPH_NODE_TYPE_MEM_FREE,
           "two allocation nodes and a free node captured: %zu", n);
    EXPECT(p != 0 && q != 0 && p != q && used() == base + MIB, "captured allocations have addresses, no memory");
    CHECK(cuMemFree_v2(plain));
    CHECK(cuStreamDestroy_v2(s));
    CUgraph graphs[] = {g, parent, captured};
    for (size_t i = 0; i < sizeof(graphs) / sizeof(graphs[0]); i++) {
        CHECK(cuGraphDestroy(graphs[i]));
    }
    EXPECT(used() == base, "all freed: %llu bytes left", used() - base);
}

static void test_arrays(void) {
    unsigned long long base = used();
    CUarray a, b;
    CUmipmappedArray m;
    CUDA_ARRAY_DESCRIPTOR_v2 d = {.Width = 1000, .Height = 10, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 4};
    CHECK(cuArrayCreate_v2(&a, &d));
    EXPECT(used() - base == 160000, "a 1000x10 float4 array: %llu bytes", used() - base);
    CUDA_ARRAY3D_DESCRIPTOR_v1 d3 = {.Width = 8, .Height = 8, .Depth = 8, .Format = CU_AD_FORMAT_HALF, .NumChannels = 1};
    CHECK(cuArray3DCreate(&b, &d3));
    EXPECT(used() - base == 160000 + 1024, "an 8x8x8 half array more: %llu bytes", used() - base);
    CUDA_ARRAY3D_DESCRIPTOR_v2 md = {.Width = 16, .Height = 0, .Depth = 0, .Format = CU_AD_FORMAT_UNSIGNED_INT8,
                                     .NumChannels = 1};
    CHECK(cuMipmappedArrayCreate(&m, &md, 5));
    EXPECT(used() - base == 160000 + 1024 + 31, "a 1D mipmap of 16+8+4+2+1 bytes more: %llu", used() - base);
    CUDA_ARRAY_DESCRIPTOR_v2 three = {.Width = 10, .Height = 10, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 3};
    CUarray bad;
    EXPECT(cuArrayCreate_v2(&bad, &three) == CUDA_ERROR_INVALID_VALUE, "3 channels are refused");
    CHECK(cuArrayDestroy(a));
    CHECK(cuArrayDestroy(b));
    CHECK(cuMipmappedArrayDestroy(m));
    EXPECT(used() == base, "all freed: %llu bytes left", used() - base);
    EXPECT(cuArrayDestroy(a) == CUDA_ERROR_INVALID_HANDLE, "destroyed twice");
}

static CUmemAllocationProp prop(void) {
    CUmemAllocationProp p;
    memset(&p, 0, sizeof(p));
    p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    return p;
}

static void test_vmm(void) {
    CUmemAllocationProp p = prop();
    size_t gran;
    CHECK(cuMemGetAllocationGranularity(&gran, &p, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
    EXPECT(gran == 2 * MIB, "granularity %zu", gran);
    CUmemGenericAllocationHandle h, h2;
    EXPECT(cuMemCreate(&h, MIB, &p, 0) == CUDA_ERROR_INVALID_VALUE, "a size that is not a multiple of it");
    unsigned long long base = used();
    CHECK(cuMemCreate(&h, 4 * MIB, &p, 0));
    EXPECT(used() - base == 4 * MIB, "created: %llu", used() - base);
    CUdeviceptr va, elsewhere = 0x1000;
    CHECK(cuMemAddressReserve(&va, 4 * MIB, 0, 0, 0));
    EXPECT(used() - base == 4 * MIB, "a reservation takes no memory");
    EXPECT(cuMemMap(elsewhere, 4 * MIB, 0, h, 0) == CUDA_ERROR_INVALID_VALUE, "map outside any reservation");
    CUmemAccessDesc access;
    memset(&access, 0, sizeof(access));
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    EXPECT(cuMemSetAccess(va, 4 * MIB, &access, 1) == CUDA_ERROR_INVALID_VALUE, "access to unmapped memory");
    CHECK(cuMemMap(va, 4 * MIB, 0, h, 0));
    EXPECT(cuMemMap(va, 2 * MIB, 0, h, 0) == CUDA_ERROR_INVALID_VALUE, "a range mapped already");
    CHECK(cuMemSetAccess(va, 4 * MIB, &access, 1));
    CHECK(cuMemRetainAllocationHandle(&h2, (void *)(uintptr_t)(va + MIB)));
    EXPECT(h2 == h, "the handle of a mapped address");
    CHECK(cuMemRelease(h));
    CHECK(cuMemRelease(h2));
    EXPECT(used() - base == 4 * MIB, "released but mapped: still held");
    EXPECT(cuMemUnmap(va, 2 * MIB) == CUDA_ERROR_INVALID_VALUE, "part of a mapping cannot be unmapped");
    EXPECT(cuMemAddressFree(va, 4 * MIB) == CUDA_ERROR_INVALID_VALUE, "a reservation with a mapping in it");
    CHECK(cuMemUnmap(va, 4 * MIB));
    EXPECT(used() == base, "released and unmapped: freed (%llu left)", used() - base);
    CHECK(cuMemAddressFree(va, 4 * MIB));
    EXPECT(cuMemRelease(h) == CUDA_ERROR_INVALID_VALUE, "a freed handle");
}

static void test_versions(void) {
    void *p = NULL;
    CUdriverProcAddressQueryResult status;
    CHECK(cuGetProcAddress("cuGraphInstantiate", &p, 10000, CU_GET_PROC_ADDRESS_DEFAULT));
    EXPECT(p == (void *)cuGraphInstantiate, "cuGraphInstantiate at 10.0");
    CHECK(cuGetProcAddress("cuGraphInstantiate", &p, 11020, CU_GET_PROC_ADDRESS_DEFAULT));
    EXPECT(p == (void *)cuGraphInstantiate_v2, "cuGraphInstantiate at 11.2");
    CHECK(cuGetProcAddress("cuGraphInstantiate", &p, 12000, CU_GET_PROC_ADDRESS_DEFAULT));
    EXPECT(p == (void *)cuGraphInstantiateWithFlags, "cuGraphInstantiate at 12.0");
    CHECK(cuGetProcAddress("cuStreamBeginCapture", &p, 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM));
    EXPECT(p == (void *)cuStreamBeginCapture_v2_ptsz, "cuStreamBeginCapture, per-thread, at 12.0");
    EXPECT(cuGetProcAddress_v2("cuGraphInstantiate", &p, 9020, CU_GET_PROC_ADDRESS_DEFAULT, &status) ==
                   CUDA_ERROR_NOT_FOUND &&
               status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT && p == NULL,
           "no graphs before CUDA 10");
}

int main(void) {
    CUcontext ctx;
    CHECK(cuInit(0));
    CHECK(cuCtxCreate_v2(&ctx, 0, 0));
    CHECK(cuModuleLoadData(&module, "kernel k 1\n"));
    CHECK(cuModuleGetFunction(&f, module, "k"));
    test_graphs();
    test_capture();
    test_memory_nodes();
    test_arrays();
    test_vmm();
    test_versions();
    CHECK(cuModuleUnload(module));
    printf("emulated graphs, capture, memory nodes, arrays and VMM: %s\n", failures == 0 ? "ok" : "FAILED");
    return failures == 0 ? 0 : 1;
}
