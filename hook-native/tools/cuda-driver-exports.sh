#!/bin/sh
# The CUDA driver's entry points as a CUDA toolkit names them, one a line, for hook-native/tests/cuda_driver_exports.txt
# (the list the hook is checked against: tests/driver_exports_test.c, docs/hook.md "Every launch and allocation"):
#
#   symbol NAME                  a name libcuda.so exports, reached by linking or dlsym: every function cuda.h declares
#                                in its three preprocessor views (the default one; CUDA_API_PER_THREAD_DEFAULT_STREAM,
#                                the _ptsz/_ptds flavours; __CUDA_API_VERSION_INTERNAL, every older flavour such as
#                                the 32-bit cuMemAlloc), and every driver name libcudart.so carries (graphics interop
#                                included, which cuda.h does not declare)
#   proc BASE VERSION FLAVOUR    what cuGetProcAddress answers: cudaTypedefs.h's PFN_<BASE>_v<VERSION>[_ptsz|_ptds],
#                                FLAVOUR default or ptsz (the per-thread default stream)
#
# No libcuda.so is needed (toolkits without a GPU driver have no stub of it): the headers and the runtime say the same.
# Usage: cuda-driver-exports.sh [CUDA_HOME]   (default /usr/local/cuda-13.0); CC picks the preprocessor (default cc).
set -eu
cuda=${1:-/usr/local/cuda-13.0}
include=$cuda/include
cc=${CC:-cc}
[ -f "$include/cuda.h" ] || { echo "cuda-driver-exports: no $include/cuda.h" >&2; exit 2; }
[ -f "$include/cudaTypedefs.h" ] || { echo "cuda-driver-exports: no $include/cudaTypedefs.h" >&2; exit 2; }
runtime=
for f in "$cuda"/lib64/libcudart.so.* "$cuda"/lib/libcudart.so.*; do
  [ -f "$f" ] && { runtime=$f; break; }
done
[ -n "$runtime" ] || { echo "cuda-driver-exports: no libcudart.so.* under $cuda" >&2; exit 2; }
version=$(sed -n 's/^#define CUDA_VERSION \([0-9]*\).*/\1/p' "$include/cuda.h")
[ -n "$version" ] || { echo "cuda-driver-exports: $include/cuda.h defines no CUDA_VERSION" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Declarations only: a name followed by its parameter list at the start of a preprocessed declaration.
declared() {
  printf '#include <cuda.h>\n' | "$cc" -E -P -I"$include" "$@" -x c - \
    | tr '\n' ' ' | tr ';' '\n' \
    | sed -n 's/^.*[[:space:]*]\(cu[A-Z][A-Za-z0-9_]*\)[[:space:]]*(.*$/\1/p'
}
{
  declared
  declared -DCUDA_API_PER_THREAD_DEFAULT_STREAM
  declared -D__CUDA_API_VERSION_INTERNAL
  # The driver names the runtime carries: every one is a driver entry point it may look up.
  strings -n 4 "$runtime" | grep -E '^cu[A-Z][A-Za-z0-9_]*$' || true
} | sort -u > "$tmp/symbols"

grep -oE 'PFN_cu[A-Za-z0-9_]+_v[0-9]+(_ptsz|_ptds)?\b' "$include/cudaTypedefs.h" | sort -u \
  | sed -E 's/^PFN_(cu[A-Za-z0-9_]+)_v([0-9]+)(_ptsz|_ptds)?$/\1 \2 \3/' \
  | awk '{ print "proc", $1, $2, ($3 == "" ? "default" : "ptsz") }' | sort -u > "$tmp/procs"

[ -s "$tmp/symbols" ] && [ -s "$tmp/procs" ] || { echo "cuda-driver-exports: nothing found in $cuda" >&2; exit 2; }
echo "# The driver entry points of the CUDA toolkit $version (CUDA_VERSION), written by"
echo "# hook-native/tools/cuda-driver-exports.sh from its cuda.h (three preprocessor views), cudaTypedefs.h and"
echo "# $(basename "$runtime")."
echo "# $(wc -l < "$tmp/symbols") exported symbols, $(wc -l < "$tmp/procs") cuGetProcAddress flavours. Regenerate, never edit."
sed 's/^/symbol /' "$tmp/symbols"
cat "$tmp/procs"
