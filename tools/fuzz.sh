#!/usr/bin/env bash
# tools/fuzz.sh TARGET [SECONDS] — runs one libFuzzer target for longer than
# CI does (default 3600 s), building build-fuzz/ (clang, libFuzzer,
# AddressSanitizer + UBSan) first if needed. TARGET: onnx, json, ini, note,
# graph or regex. The corpus grows in build-fuzz/tests/fuzz/work/TARGET/corpus
# (the committed seeds in tests/fuzz/corpus/TARGET are read, never written);
# a finding lands in .../artifacts/. To keep one as a regression test, fix
# it, then copy the file into tests/fuzz/regressions/TARGET/ (every build
# replays that folder: ctest -L fuzz).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
target=${1:-}
seconds=${2:-3600}
case "$target" in
onnx | json | ini | note | graph | regex) ;;
*)
    echo "usage: tools/fuzz.sh onnx|json|ini|note|graph|regex [SECONDS]" >&2
    exit 2
    ;;
esac
if ! command -v clang >/dev/null; then
    echo "tools/fuzz.sh: needs clang (apt-get install clang)" >&2
    exit 1
fi
B="$ROOT/build-fuzz"
cmake -S "$ROOT" -B "$B" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DPLINTH_FUZZ=ON -DPLINTH_STAGE_DIR="$B/modules.d" >/dev/null
cmake --build "$B" -j"$(nproc)" --target plinth_fuzz >/dev/null
work="$B/tests/fuzz/work/$target"
mkdir -p "$work/corpus" "$work/artifacts"
export ASAN_OPTIONS="allocator_may_return_null=1:max_allocation_size_mb=1024:detect_leaks=1:protect_shadow_gap=0:intercept_tls_get_addr=0"
export LSAN_OPTIONS="suppressions=$ROOT/tests/lsan.supp"
exec "$B/bin/fuzz_$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$work/artifacts/" \
    "$work/corpus" "$ROOT/tests/fuzz/corpus/$target" "$ROOT/tests/fuzz/regressions/$target"
