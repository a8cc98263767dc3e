#!/bin/sh
# test_install.sh — `cmake --install` as a user and a vendor meet it: the
# tree installed into a temporary prefix, then moved elsewhere (every path
# inside is relative); the installed CLI finds libplinth ($ORIGIN RUNPATH)
# and its modules (the installed backend.ini, found beside libplinth) with
# no configuration and runs a model; sdk/template builds with
# find_package(PlinthSDK) and loads from the installed module folder; an
# application builds with find_package(Plinth) and with pkg-config and
# finds the modules too.
#
# usage: test_install.sh BUILD_DIR SOURCE_DIR C_COMPILER
set -eu
build=$1
src=$2
cc=$3
unset PLINTH_CONFIG PLINTH_MODULE_PATH

tmp=$(mktemp -d "${TMPDIR:-/tmp}/plinth-install-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
chmod 0700 "$tmp"
fail() {
    echo "install: FAILED: $*" >&2
    exit 1
}

cmake --install "$build" --prefix "$tmp/first" >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "cmake --install"; }
mv "$tmp/first" "$tmp/moved"
p=$tmp/moved
for f in bin/plinth lib/libplinth.so etc/plinth/backend.ini include/plinth/plinth.h \
         include/plinth/module.h lib/plinth/modules/libplinth_cpu.so \
         lib/plinth/modules/libplinth_onnx.so lib/plinth/modules/libplinth_json.so \
         lib/cmake/Plinth/PlinthConfig.cmake lib/cmake/PlinthSDK/PlinthSDKConfig.cmake \
         lib/cmake/PlinthSDK/PlinthModule.cmake lib/pkgconfig/plinth.pc; do
    [ -e "$p/$f" ] || fail "$f was not installed"
done
readelf -d "$p/bin/plinth" | grep -q 'R.*PATH.*\$ORIGIN' || fail "the CLI's RUNPATH is not relative"
grep -q "^modules = ../../lib/plinth/modules" "$p/etc/plinth/backend.ini" ||
    fail "the installed backend.ini does not name the module folder"

# The CLI, from a folder without a backend.ini, with no configuration.
cd "$tmp"
"$p/bin/plinth" modules >"$tmp/modules.txt" 2>&1 || { cat "$tmp/modules.txt"; fail "plinth modules"; }
for m in cpu onnx json; do
    grep -E "^ *$m +[^ ]+ +loaded" "$tmp/modules.txt" >/dev/null ||
        { cat "$tmp/modules.txt"; fail "module $m is not loaded"; }
done
"$p/bin/plinth" run "$src/examples/mlp/model.json" >"$tmp/run.txt" 2>&1 ||
    { cat "$tmp/run.txt"; fail "plinth run"; }

# A vendor's module against the installed SDK.
mkdir "$tmp/mymod"
cp "$src/sdk/template/template.c" "$src/sdk/template/CMakeLists.txt" "$tmp/mymod/"
cmake -S "$tmp/mymod" -B "$tmp/mymod-build" -DCMAKE_C_COMPILER="$cc" \
    -DCMAKE_PREFIX_PATH="$p" >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "configure the template"; }
grep -q "PlinthSDK" "$tmp/mymod-build/CMakeCache.txt" || fail "find_package(PlinthSDK) was not used"
cmake --build "$tmp/mymod-build" >>"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "build the template"; }
install -m 755 "$tmp/mymod-build/libplinth_template.so" "$p/lib/plinth/modules/"
# ... which the installed check-module passes, its node tests run by the
# installed conformance runner where the test data is here.
tests=""
[ -d /usr/share/libonnx-testdata/data/node/test_relu ] &&
    tests="--tests /usr/share/libonnx-testdata/data/node/test_relu"
"$p/bin/plinth" check-module "$p/lib/plinth/modules/libplinth_template.so" $tests \
    >"$tmp/check.txt" 2>&1 || { cat "$tmp/check.txt"; fail "plinth check-module"; }
grep -q "check-module: passed" "$tmp/check.txt" || fail "check-module did not pass"
if [ -n "$tests" ]; then
    grep -q "node tests on template: passed=1 failed=0" "$tmp/check.txt" ||
        { cat "$tmp/check.txt"; fail "the installed runner did not run the node test"; }
fi
"$p/bin/plinth" modules >"$tmp/modules2.txt" 2>&1 || true
grep -E "^ *template +[^ ]+ +loaded" "$tmp/modules2.txt" >/dev/null ||
    { cat "$tmp/modules2.txt"; fail "the template module is not loaded"; }

# An application: find_package(Plinth), then pkg-config.
mkdir "$tmp/app"
cat >"$tmp/app/app.c" <<'C'
#include <plinth/plinth.h>
#include <stdio.h>
int main(void)
{
    pl_runtime *rt = NULL;
    pl_status *st = pl_runtime_create(NULL, &rt);
    if (st != NULL) {
        fprintf(stderr, "%s\n", pl_status_message(st));
        return 1;
    }
    printf("devices %zu\n", pl_runtime_device_count(rt));
    pl_runtime_destroy(rt);
    return 0;
}
C
cat >"$tmp/app/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.16)
project(app C)
find_package(Plinth REQUIRED)
add_executable(app app.c)
target_link_libraries(app PRIVATE Plinth::plinth)
CM
cmake -S "$tmp/app" -B "$tmp/app-build" -DCMAKE_C_COMPILER="$cc" -DCMAKE_PREFIX_PATH="$p" \
    >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "configure the application"; }
cmake --build "$tmp/app-build" >>"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "build the application"; }
out=$("$tmp/app-build/app") || fail "the CMake-built application failed"
case "$out" in "devices 0" | "") fail "the application found no device: $out" ;; esac
flags=$(PKG_CONFIG_PATH="$p/lib/pkgconfig" pkg-config --cflags --libs plinth) ||
    fail "pkg-config does not know plinth"
# shellcheck disable=SC2086
"$cc" -o "$tmp/app2" "$tmp/app/app.c" $flags -Wl,-rpath,"$p/lib" || fail "build with pkg-config"
out2=$("$tmp/app2") || fail "the pkg-config-built application failed"
[ "$out2" = "$out" ] || fail "the two applications disagree: '$out' / '$out2'"
echo "install: passed ($out)"
