#!/usr/bin/env bash
# tools/dev.sh — the two commands of README.md, for a fresh Debian 12 machine.
#
#   bash tools/dev.sh demo   install what is missing, build everything, and run
#                            the demo through the default backend.ini
#   bash tools/dev.sh test   install what is missing, build everything twice
#                            (plain, and with AddressSanitizer+UBSan) and run
#                            the whole CTest suite in both builds, then the
#                            engine, CPU-pool and allocation-sweep tests in
#                            a ThreadSanitizer build, and each libFuzzer
#                            target (build-fuzz/, clang) for 20 seconds
#
# Debian packages are installed with apt-get when missing (run as root).
# Build directories: build/ (plain; stages modules into modules.d/),
# build-asan/ and build-tsan/ (sanitized; each stages into its own modules.d/),
# build-fuzz/ (clang, libFuzzer; only the fuzz targets and their modules).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
JOBS=$(nproc 2>/dev/null || echo 2)

PACKAGES=(build-essential cmake pkg-config python3
          libopenblas-dev libdnnl-dev libinih-dev libffi-dev libelf-dev
          libjansson-dev libdlpack-dev libprotobuf-c-dev protobuf-c-compiler
          libonnx-dev libonnx-testdata python3-numpy python3-onnx
          python3-torch   # tests/difftest, cpu_rnn, opset_upgrade; torch: zoo, cpu_rnn
          valgrind  # tests/python: examples/app.c leak-free
          clang libclang-rt-14-dev)  # the libFuzzer build (tests/fuzz)

install_packages() {
    local missing=()
    for p in "${PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
            || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "dev.sh: installing missing packages: ${missing[*]}"
    local sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

build() {   # build DIR [cmake args...]; with $TARGETS set, only those targets
    local dir=$1; shift
    cmake -S "$ROOT" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
    # shellcheck disable=SC2086  # TARGETS is a list of names
    cmake --build "$dir" -j"$JOBS" ${TARGETS:+--target $TARGETS}
}

# What the ThreadSanitizer run needs (the test programs of its labels,
# engine|core|alloc|array, and the modules and fixtures they load): building
# every test program there cost CI minutes for tests it never runs.
TSAN_TARGETS="test_engine test_core_internal test_alloc_sweep test_array test_control_threads
              plinth_test_fixtures plinth_cpu plinth_onnx plinth_json plinth_example_acc
              plinth_onednn plinth_cli"

case "${1:-}" in
demo)
    install_packages
    build build
    echo
    echo "== plinth modules (default backend.ini) =="
    ./build/bin/plinth modules
    echo
    echo "== plinth explain examples/mlp/model.json =="
    ./build/bin/plinth explain examples/mlp/model.json
    echo
    echo "== plinth run examples/mlp/model.json (random input, fixed seed) =="
    ./build/bin/plinth run examples/mlp/model.json
    echo
    echo "== the same model offloaded to the simulated accelerator (examples/backend-acc.ini) =="
    ./build/bin/plinth explain examples/mlp/model.json --config examples/backend-acc.ini
    ./build/bin/plinth run examples/mlp/model.json --config examples/backend-acc.ini
    echo
    echo "== examples/app.c: load an accelerator by path, configure it, call it, run on it =="
    ./build/bin/plinth_app modules.d
    echo
    echo "== examples/app.py: the same from Python =="
    # Debian's interpreter: the one apt-get gave numpy (a pyenv or venv
    # python3 earlier on PATH may lack it), as the Python tests use.
    py=/usr/bin/python3; [ -x "$py" ] || py=python3
    PYTHONPATH=python "$py" examples/app.py modules.d
    ;;
test)
    install_packages
    build build
    build build-asan -DPLINTH_SANITIZE=ON -DPLINTH_STAGE_DIR="$ROOT/build-asan/modules.d"
    TARGETS=$TSAN_TARGETS build build-tsan -DPLINTH_TSAN=ON \
        -DPLINTH_STAGE_DIR="$ROOT/build-tsan/modules.d"
    cmake -S "$ROOT" -B build-fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DPLINTH_FUZZ=ON -DPLINTH_STAGE_DIR="$ROOT/build-fuzz/modules.d" >/dev/null
    cmake --build build-fuzz -j"$JOBS" --target plinth_fuzz
    # ctest -j starts the costliest tests first when it has their costs; a
    # fresh clone has none, so the longest (python.OnnxTest, 40 s under
    # ASan) started last and ran alone at the end. tests/ctest_cost.txt
    # holds the seconds of every test over 1.5 s (a CI run's, the largest
    # over the four builds); a build's own measurements are kept.
    for d in build build-asan build-tsan build-fuzz; do
        mkdir -p "$d/Testing/Temporary"
        [ -s "$d/Testing/Temporary/CTestCostData.txt" ] ||
            cp tests/ctest_cost.txt "$d/Testing/Temporary/CTestCostData.txt"
    done
    rc=0
    echo "== tests: libFuzzer targets (clang, ASan+UBSan), 20 s each, and their replays =="
    ctest --test-dir build-fuzz --output-on-failure -j"$JOBS" -L fuzz || rc=1
    echo "== tests: ThreadSanitizer build (engine, CPU pool, allocation sweeps, arrays and eager ops) =="
    TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
        ctest --test-dir build-tsan --output-on-failure -j"$JOBS" -L 'engine|core|alloc|array' || rc=1
    echo "== tests: plain build =="
    ctest --test-dir build --output-on-failure -j"$JOBS" || rc=1
    echo "== tests: AddressSanitizer + UBSan build =="
    ctest --test-dir build-asan --output-on-failure -j"$JOBS" || rc=1
    exit $rc
    ;;
*)
    echo "usage: bash tools/dev.sh demo|test" >&2
    exit 2
    ;;
esac
