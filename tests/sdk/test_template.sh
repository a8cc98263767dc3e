#!/bin/sh
# test_template.sh — sdk/template as a vendor meets it: configured and built
# with CMake against sdk/ alone, once where it lies (the SDK is the folder
# above) and once copied out of the tree with -DPLINTH_SDK_DIR; the module
# then loads from its own folder beside the staged ones, runs the Relu, Add
# and Mul of a model (plinth explain says so) with the same output as cpu,
# refuses the Softmax with its reason, and takes its configure key from
# backend.ini (an unknown key is refused naming the key and its line).
# Then a module written in C++ (cxx_module.cpp) is built against sdk/ alone
# with every SDK header, -std=c++11 -pedantic -Werror: it must export the
# one unmangled entry point and run its Relu as cpu does (skipped, with a
# note, where no C++ compiler is found).
#
# usage: test_template.sh PLINTH_BINARY STAGE_DIR SOURCE_DIR C_COMPILER [CXX_COMPILER]
set -eu
plinth=$1
stage=$2
src=$3
cc=$4
cxx=${5:-}
unset PLINTH_CONFIG PLINTH_MODULE_PATH

tmp=$(mktemp -d "${TMPDIR:-/tmp}/plinth-tmpl-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
chmod 0700 "$tmp"
fail() {
    echo "template: FAILED: $*" >&2
    exit 1
}

# 1. In place, and as a copy elsewhere pointed at the SDK.
mkdir -p "$tmp/mods" "$tmp/copy"
cmake -S "$src/sdk/template" -B "$tmp/b1" -DCMAKE_C_COMPILER="$cc" >"$tmp/log" 2>&1 ||
    { cat "$tmp/log"; fail "configure in sdk/template"; }
cmake --build "$tmp/b1" >>"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "build in sdk/template"; }
cp "$src/sdk/template/template.c" "$src/sdk/template/CMakeLists.txt" "$tmp/copy/"
cmake -S "$tmp/copy" -B "$tmp/b2" -DCMAKE_C_COMPILER="$cc" -DPLINTH_SDK_DIR="$src/sdk" \
    -DPLINTH_STAGE_DIR="$tmp/mods" >>"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "configure a copy"; }
cmake --build "$tmp/b2" >>"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "build a copy"; }
[ -f "$tmp/mods/libplinth_template.so" ] || fail "PLINTH_STAGE_DIR did not receive the module"
[ -f "$tmp/b1/libplinth_template.so" ] || fail "no module built in place"
# Only the entry point is exported, and no libplinth is needed.
exported=$(nm -D --defined-only "$tmp/mods/libplinth_template.so" | awk '{print $3}' | grep -v '^_' | tr '\n' ' ')
[ "$exported" = "pl_module_entry " ] || fail "exports '$exported'"
if readelf -d "$tmp/mods/libplinth_template.so" | grep -q 'libplinth\.so'; then
    fail "the module links libplinth"
fi

# 2. A model: y = Softmax((Relu(x) + x) * x).
cat >"$tmp/model.json" <<'JSON'
{"format":"plinth-graph","version":1,"opset_import":[{"domain":"","version":13}],
 "inputs":["x"],"outputs":["y"],
 "tensors":[{"name":"x","dtype":"f32","shape":[2,16]}],
 "nodes":[{"name":"relu","op":"Relu","inputs":["x"],"outputs":["r"]},
          {"name":"add","op":"Add","inputs":["r","x"],"outputs":["a"]},
          {"name":"mul","op":"Mul","inputs":["a","x"],"outputs":["m"]},
          {"name":"softmax","op":"Softmax","inputs":["m"],"outputs":["y"]}]}
JSON
write_ini() { # ORDER EXTRA
    printf '[runtime]\nmodules = %s, %s\nthreads = 2\ncache_dir =\n[placement]\norder = %s\nchoose = first\n%s\n' \
        "$stage" "$tmp/mods" "$1" "$2" >"$tmp/backend.ini"
}
write_ini "template, cpu" "[template]
min_elements = 4"
"$plinth" --config "$tmp/backend.ini" modules >"$tmp/modules.txt" 2>&1 || { cat "$tmp/modules.txt"; fail "plinth modules"; }
grep -q "template" "$tmp/modules.txt" || fail "template not listed"
"$plinth" --config "$tmp/backend.ini" explain "$tmp/model.json" >"$tmp/explain.txt" 2>&1 ||
    { cat "$tmp/explain.txt"; fail "explain"; }
for n in relu add mul; do
    grep -E "^ *$n .*template" "$tmp/explain.txt" >/dev/null ||
        { cat "$tmp/explain.txt"; fail "$n is not on template"; }
done
grep -q "template: Softmax: op not supported" "$tmp/explain.txt" ||
    { cat "$tmp/explain.txt"; fail "no refusal reason for Softmax"; }
"$plinth" --config "$tmp/backend.ini" run "$tmp/model.json" --output-dir "$tmp/t" >"$tmp/run1.txt" 2>&1 ||
    { cat "$tmp/run1.txt"; fail "run on template"; }
write_ini "cpu" ""
"$plinth" --config "$tmp/backend.ini" run "$tmp/model.json" --output-dir "$tmp/c" >"$tmp/run2.txt" 2>&1 ||
    { cat "$tmp/run2.txt"; fail "run on cpu"; }
cmp -s "$tmp/t/y.npy" "$tmp/c/y.npy" || fail "template and cpu outputs differ"

# 3. A bad key is refused with the file and line, and nothing else is lost.
write_ini "template, cpu" "[template]
speed = max"
if "$plinth" --config "$tmp/backend.ini" modules --strict >"$tmp/bad.txt" 2>&1; then
    fail "an unknown key was accepted"
fi
grep -q "template.*rejected: .*backend.ini:9: unknown key 'speed'" "$tmp/bad.txt" ||
    { cat "$tmp/bad.txt"; fail "the refusal does not name the file, line and key"; }
# 4. A module in C++.
[ -n "$cxx" ] || cxx=$(command -v c++ || command -v g++ || command -v clang++ || true)
if [ -z "$cxx" ]; then
    echo "template: no C++ compiler found; the C++ module is not checked"
else
    mkdir -p "$tmp/cxxmods"
    "$cxx" -std=c++11 -Wall -Wextra -pedantic -Werror -fPIC -shared -fvisibility=hidden \
        -I "$src/sdk/include" "$src/tests/sdk/cxx_module.cpp" \
        -o "$tmp/cxxmods/libplinth_cxxmod.so" >"$tmp/cxx.txt" 2>&1 ||
        { cat "$tmp/cxx.txt"; fail "the C++ module does not build against sdk/"; }
    exported=$(nm -D --defined-only "$tmp/cxxmods/libplinth_cxxmod.so" | awk '{print $3}' | grep -v '^_' | tr '\n' ' ')
    [ "$exported" = "pl_module_entry " ] || fail "the C++ module exports '$exported'"
    printf '[runtime]\nmodules = %s, %s\nthreads = 2\ncache_dir =\n[placement]\norder = cxxmod, cpu\nchoose = first\n' \
        "$stage" "$tmp/cxxmods" >"$tmp/backend.ini"
    "$plinth" --config "$tmp/backend.ini" explain "$tmp/model.json" >"$tmp/cxx_explain.txt" 2>&1 ||
        { cat "$tmp/cxx_explain.txt"; fail "explain with the C++ module"; }
    grep -E "^ *relu .*cxxmod" "$tmp/cxx_explain.txt" >/dev/null ||
        { cat "$tmp/cxx_explain.txt"; fail "relu is not on the C++ module"; }
    grep -q "cxxmod: Add: op not supported" "$tmp/cxx_explain.txt" ||
        { cat "$tmp/cxx_explain.txt"; fail "no refusal reason from the C++ module"; }
    "$plinth" --config "$tmp/backend.ini" run "$tmp/model.json" --output-dir "$tmp/x" >"$tmp/run3.txt" 2>&1 ||
        { cat "$tmp/run3.txt"; fail "run on the C++ module"; }
    cmp -s "$tmp/x/y.npy" "$tmp/c/y.npy" || fail "the C++ module's and cpu's outputs differ"
fi
echo "template: passed"
