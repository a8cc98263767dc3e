#!/bin/sh
# test_cli.sh — the `plinth` command-line program as an operator uses it:
# version and help, exit codes, and `plinth modules` (table and JSON) over the
# staged modules, including a module copy that is writable by others, and the
# log level backend.ini sets; and `run`, `explain` and `bench` on models the
# cases write: outputs read across devices, dead branches, a device whose
# memory runs out, a plan its own runs changed (measure), --shape,
# --output-dir, every dtype in and out of .npy
# files (strings as NumPy's <U), and a model without outputs.
#
# usage: test_cli.sh CASE PLINTH_BINARY STAGE_DIR PYTHON3 [DEVMEM_FIXTURE [FIXTURE_DIR]]
#   PYTHON3 may be "" or CMake's ...-NOTFOUND when none was found; the cases
#   that need it then skip (77). They need only its standard library.
#   DEVMEM_FIXTURE is tests/fixtures/devmem_module.c built (fx_devmem.so);
#   FIXTURE_DIR the loader's fixture modules (tests/fixtures/fixture.c).
set -eu

if [ $# -lt 4 ]; then
    echo "usage: $0 CASE PLINTH_BINARY STAGE_DIR PYTHON3 [DEVMEM_FIXTURE]" >&2
    exit 2
fi
case_name=$1
plinth=$2
stage=$3
python=$4
devmem=${5:-}
fixtures=${6:-}
examples=$(cd "$(dirname "$0")/../examples" && pwd)

# The environment must not steer the program under test.
unset PLINTH_CONFIG PLINTH_MODULE_PATH

tmp=$(mktemp -d "${TMPDIR:-/tmp}/plinth-cli-XXXXXX")
trap 'chmod -R u+rwx "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
chmod 0700 "$tmp"

fail() {
    echo "$case_name: FAILED: $*" >&2
    exit 1
}

# Runs the program, keeping stdout in $tmp/out, stderr in $tmp/err and the
# exit status in $rc; never fails by itself.
run() {
    rc=0
    "$plinth" "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
    echo "+ plinth $* -> exit $rc" >&2
}

show() {
    echo "--- stdout" >&2
    cat "$tmp/out" >&2
    echo "--- stderr" >&2
    cat "$tmp/err" >&2
}

need_python() {
    case "$python" in "" | *NOTFOUND) python="" ;; esac
    if [ -z "$python" ]; then
        echo "$case_name: skipped: no python3 to check JSON" >&2
        exit 77
    fi
}

# Writes $tmp/backend.ini naming $1 as the module path.
write_ini() {
    printf '[runtime]\nmodules = %s\n' "$1" >"$tmp/backend.ini"
}

# Checks $tmp/out as a JSON array of module objects; every further argument
# is NAME=STATUS that must hold for the module of that name.
check_json() {
    cat >"$tmp/check.py" <<'EOF'
import json, sys
doc = json.load(sys.stdin)
assert isinstance(doc, list), "top level is %s, not an array" % type(doc).__name__
assert doc, "the array is empty"
for m in doc:
    assert isinstance(m, dict), "element %r is not an object" % (m,)
    for key in ("name", "status", "devices", "path", "reason"):
        assert key in m, "element %r lacks %r" % (m, key)
# A module is looked up by its name, or by its file libplinth_<name>.so (a
# module refused before its identity note was read is named by its file).
by_name = {}
for m in doc:
    by_name[m["name"]] = m
    base = m["path"].rsplit("/", 1)[-1]
    if base.startswith("libplinth_") and base.endswith(".so"):
        by_name.setdefault(base[len("libplinth_"):-3], m)
for want in sys.argv[1:]:
    name, status = want.split("=", 1)
    assert name in by_name, "no module %r in %r" % (name, sorted(by_name))
    got = by_name[name]["status"]
    assert got == status, "%s is %r (%s), expected %r" % (
        name, got, by_name[name]["reason"], status)
    if status != "loaded":
        assert by_name[name]["reason"], "%s: %s without a reason" % (name, got)
print("JSON ok:", ", ".join(sys.argv[1:]), file=sys.stderr)
EOF
    "$python" "$tmp/check.py" "$@" <"$tmp/out" || { show; fail "JSON check failed"; }
}

need_stage() {
    for m in cpu onednn example_acc; do
        [ -f "$stage/libplinth_$m.so" ] || fail "libplinth_$m.so is not staged in $stage"
    done
}

# Writes $tmp/$1.ini: the staged modules, [placement] order = $2.
write_order_ini() {
    printf '[runtime]\nmodules = %s\n[placement]\norder = %s\n' "$stage" "$2" >"$tmp/$1.ini"
}

# fixture_relu FIXTURE PLACEMENT: $tmp/modules holding the staged cpu and
# json modules and the fixture module file FIXTURE; $tmp/backend.ini on
# it, PLACEMENT (printf text) after its [placement] line; and
# $tmp/relu.json, one Relu node 'act' over [4, 8].
fixture_relu() {
    mkdir -m 0755 "$tmp/modules"
    cp "$stage/libplinth_cpu.so" "$stage/libplinth_json.so" "$1" "$tmp/modules/"
    chmod 0644 "$tmp/modules/"*.so
    printf "[runtime]\nmodules = %s\n[placement]\n$2\n" "$tmp/modules" >"$tmp/backend.ini"
    cat >"$tmp/relu.json" <<'EOF'
{"format": "plinth-graph", "version": 1, "opset_import": [{"domain": "", "version": 13}],
 "inputs": ["x"], "outputs": ["y"],
 "tensors": [{"name": "x", "dtype": "f32", "shape": [4, 8]}],
 "nodes": [{"name": "act", "op": "Relu", "inputs": ["x"], "outputs": ["y"]}]}
EOF
}

# Writes $tmp/npy.py, a reader of .npy files on the standard library alone:
# npy.read(FILE) gives (descr, shape, values).
write_npy_reader() {
    cat >"$tmp/npy.py" <<'EOF'
import ast, struct
def read(path):
    with open(path, "rb") as f:
        b = f.read()
    assert b[:6] == b"\x93NUMPY", path + ": bad magic"
    if b[6] == 1:
        hl, off = struct.unpack("<H", b[8:10])[0], 10
    else:
        hl, off = struct.unpack("<I", b[8:12])[0], 12
    h = ast.literal_eval(b[off:off + hl].decode("latin1"))
    assert (off + hl) % 64 == 0, path + ": data not 64-byte aligned"
    assert not h["fortran_order"], path
    n = 1
    for d in h["shape"]:
        n *= d
    fmt = {"<f4": "f", "<f8": "d", "<f2": "e", "|u1": "B", "|i1": "b", "<i4": "i",
           "<i8": "q", "|b1": "?", "<u2": "H"}[h["descr"]]
    data = b[off + hl:]
    assert len(data) == n * struct.calcsize(fmt), path + ": wrong data size"
    return h["descr"], h["shape"], struct.unpack("<%d%s" % (n, fmt), data)
EOF
}

# Writes $tmp/$1.json: examples/mlp/model.json edited by the Python
# statement $2 on the loaded document `m` (weights beside it).
write_mlp_variant() {
    cp "$examples/mlp/model.weights" "$tmp/model.weights"
    "$python" - "$examples/mlp/model.json" "$tmp/$1.json" "$2" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
exec(sys.argv[3])
json.dump(m, open(sys.argv[2], "w"))
EOF
}

# Compares two .npy files element by element within 1e-5 (relative above 1).
npy_close() {
    "$python" - "$tmp" "$1" "$2" <<'EOF' || { show; fail "$1 and $2 differ"; }
import sys
sys.path.insert(0, sys.argv[1])
import npy
da, sa, a = npy.read(sys.argv[2])
db, sb, b = npy.read(sys.argv[3])
assert (da, sa) == (db, sb), "%s%s vs %s%s" % (da, sa, db, sb)
for i, (x, y) in enumerate(zip(a, b)):
    assert abs(x - y) <= 1e-5 * max(1.0, abs(y)), "element %d: %r vs %r" % (i, x, y)
EOF
}

case "$case_name" in
drop_in_faults)
    # Drop-ins that abort, fault or hang in init, abort in a constructor, or
    # were built for a CPU feature no machine has, beside cpu: `modules`
    # names each with its reason and exits 0 within the probe's time limit,
    # and a model runs on cpu.
    need_stage
    [ -n "$fixtures" ] || fail "no fixture folder (FIXTURE_DIR)"
    fx=$fixtures
    mkdir "$tmp/mods"
    cp "$stage/libplinth_cpu.so" "$stage/libplinth_json.so" "$tmp/mods/"
    for f in fx_init_abort fx_init_segv fx_init_hang fx_ctor_abort fx_needs_bit40; do
        cp "$fx/$f.so" "$tmp/mods/"
    done
    chmod 0644 "$tmp"/mods/*.so
    printf '[runtime]\nmodules = %s\nprobe_timeout_ms = 2000\n' "$tmp/mods" >"$tmp/backend.ini"
    run modules --config "$tmp/backend.ini"
    [ "$rc" -eq 0 ] || { show; fail "modules exited $rc"; }
    cat "$tmp/err" >>"$tmp/out"
    for want in "fx_init_abort.so): rejected: crashed in init (SIGABRT)" \
                "fx_init_segv.so): rejected: crashed in init (SIGSEGV)" \
                "fx_init_hang.so): rejected: init did not return within 2000 ms" \
                "fx_ctor_abort.so): rejected: crashed in its constructors (SIGABRT)" \
                "fx_needs_bit40.so): rejected: built for CPU features this machine lacks: bit 40"; do
        grep -qF "$want" "$tmp/out" || { show; fail "no line with '$want'"; }
    done
    grep -E "^cpu +" "$tmp/out" | grep -q loaded || { show; fail "cpu is not loaded"; }
    run run "$examples/mlp/model.json" --config "$tmp/backend.ini"
    [ "$rc" -eq 0 ] || { show; fail "run exited $rc beside the broken drop-ins"; }
    ;;
explain_staged)
    # A NonZero after the MLP makes its output's length data-dependent: the
    # session is staged, and explain says how many nodes wait for a run
    # instead of leaving them out silently.
    need_python
    need_stage
    write_mlp_variant staged 'm["outputs"].append("idx")
m["nodes"] += [
    {"name": "zero", "op": "Constant", "inputs": [], "outputs": ["z"],
     "attributes": {"value": {"tensor": {"dtype": "f32", "shape": [], "values": [0]}}}},
    {"name": "pos", "op": "Greater", "inputs": ["y", "z"], "outputs": ["p"]},
    {"name": "nz", "op": "NonZero", "inputs": ["p"], "outputs": ["idx"]}]'
    write_order_ini cpu cpu
    run explain "$tmp/staged.json" --config "$tmp/cpu.ini"
    [ "$rc" -eq 0 ] || { show; fail "explain exited $rc"; }
    grep -Eq "^placed at run time: [1-9][0-9]* node\(s\)" "$tmp/out" ||
        { show; fail "explain does not say which nodes wait for a run"; }
    run run "$tmp/staged.json" --config "$tmp/cpu.ini"
    [ "$rc" -eq 0 ] || { show; fail "run exited $rc"; }
    ;;
run_warmup)
    # --warmup runs first and is left out of the step times: the count
    # printed is --runs; a negative count is refused.
    need_stage
    printf '[runtime]\nmodules = %s\n' "$stage" >"$tmp/backend.ini"
    run run "$examples/mlp/model.json" --config "$tmp/backend.ini" --runs 3 --warmup 2
    [ "$rc" -eq 0 ] || { show; fail "run --warmup exited $rc"; }
    grep -q "^steps (3 runs):" "$tmp/out" || { show; fail "no 'steps (3 runs)'"; }
    grep -Eq "^ +[0-9]+\.[0-9]{3} ms " "$tmp/out" || { show; fail "no step times"; }
    run run "$examples/mlp/model.json" --config "$tmp/backend.ini" --warmup -1
    [ "$rc" -ne 0 ] || { show; fail "--warmup -1 was taken"; }
    grep -q "needs a number >= 0" "$tmp/err" || { show; fail "no reason for --warmup -1"; }
    ;;
version)
    run --version
    [ "$rc" -eq 0 ] || { show; fail "--version exited $rc"; }
    grep -q "plinth 0.1.0" "$tmp/out" || { show; fail "no 'plinth 0.1.0' in --version"; }
    ;;
help)
    run --help
    [ "$rc" -eq 0 ] || { show; fail "--help exited $rc"; }
    cat "$tmp/err" >>"$tmp/out"
    grep -q "modules" "$tmp/out" || { show; fail "--help does not mention 'modules'"; }
    ;;
unknown_command)
    run frobnicate
    [ "$rc" -eq 2 ] || { show; fail "an unknown command exited $rc, expected 2"; }
    [ -s "$tmp/err" ] || { show; fail "an unknown command printed nothing on stderr"; }
    ;;
modules_table)
    need_stage
    write_ini "$stage"
    run modules --config "$tmp/backend.ini"
    [ "$rc" -eq 0 ] || { show; fail "modules exited $rc"; }
    for m in cpu onednn example_acc; do
        grep -E "(^|[^a-z_])$m([^a-z_]|\$)" "$tmp/out" | grep -q "loaded" ||
            { show; fail "the table has no line showing $m loaded"; }
    done
    ;;
modules_json)
    need_python
    need_stage
    write_ini "$stage"
    run modules --json --config "$tmp/backend.ini"
    [ "$rc" -eq 0 ] || { show; fail "modules --json exited $rc"; }
    check_json cpu=loaded onednn=loaded example_acc=loaded
    ;;
world_writable)
    need_python
    need_stage
    mkdir -m 0755 "$tmp/modules"
    for m in cpu onednn example_acc; do
        cp "$stage/libplinth_$m.so" "$tmp/modules/"
        chmod 0644 "$tmp/modules/libplinth_$m.so"
    done
    chmod 0666 "$tmp/modules/libplinth_example_acc.so"
    write_ini modules
    run modules --json --config "$tmp/backend.ini"
    echo "(exit status with a rejected module: $rc)" >&2
    check_json cpu=loaded onednn=loaded example_acc=rejected
    grep -q "writable by group or others" "$tmp/out" ||
        { show; fail "the rejection does not say the file is writable by group or others"; }
    ;;
log_levels)
    need_stage
    # The default (warn) keeps stderr quiet: a loaded module is no news.
    write_ini "$stage"
    run modules --config "$tmp/backend.ini"
    [ "$rc" -eq 0 ] || { show; fail "modules exited $rc"; }
    if grep -q "debug:" "$tmp/err"; then show; fail "debug lines at the default log level"; fi
    # `log = debug` in backend.ini is honoured by the CLI too.
    printf 'log = debug\n' >>"$tmp/backend.ini"
    run modules --config "$tmp/backend.ini"
    [ "$rc" -eq 0 ] || { show; fail "modules with log = debug exited $rc"; }
    grep -q "^plinth: debug: module cpu .*loaded" "$tmp/err" ||
        { show; fail "log = debug printed no debug line for the cpu module"; }
    ;;
run_output_read_across)
    # logits is a graph output made on example_acc and read there by
    # nobody, read on the host by softmax.
    need_python
    need_stage
    write_npy_reader
    write_mlp_variant two 'm["outputs"].append("logits")'
    write_order_ini cpu cpu
    write_order_ini acc "example_acc, cpu"
    mkdir "$tmp/cpu" "$tmp/acc"
    run run "$tmp/two.json" --config "$tmp/cpu.ini" --output-dir "$tmp/cpu"
    [ "$rc" -eq 0 ] || { show; fail "run on cpu exited $rc"; }
    run run "$tmp/two.json" --config "$tmp/acc.ini" --output-dir "$tmp/acc"
    [ "$rc" -eq 0 ] || { show; fail "run on example_acc, cpu exited $rc"; }
    grep -q "^output logits: f32\[1,10\]" "$tmp/out" || { show; fail "no logits output"; }
    grep -q "example_acc" "$tmp/out" || { show; fail "nothing ran on example_acc"; }
    npy_close "$tmp/acc/logits.npy" "$tmp/cpu/logits.npy"
    npy_close "$tmp/acc/y.npy" "$tmp/cpu/y.npy"
    ;;
run_dead_branch)
    # dead_y reads y on the host and alone makes a subgraph of example_acc;
    # dead_x reads the input there; dead_h reads an accelerator tensor on cpu.
    need_python
    need_stage
    write_npy_reader
    write_mlp_variant dead 'm["nodes"] += [
        {"name": "dead_y", "op": "Relu", "inputs": ["y"], "outputs": ["dy"]},
        {"name": "dead_x", "op": "Relu", "inputs": ["x"], "outputs": ["dx"]},
        {"name": "dead_h", "op": "Softmax", "inputs": ["h3"], "outputs": ["dh"]}]'
    # optimize = basic: the session's pruning is what this case is about
    # (`all` removes dead nodes at load; checked at the end).
    write_order_ini cpu cpu
    write_order_ini acc "example_acc, cpu"
    printf '[graph]\noptimize = basic\n' >>"$tmp/cpu.ini"
    printf '[graph]\noptimize = basic\n' >>"$tmp/acc.ini"
    mkdir "$tmp/cpu" "$tmp/acc"
    run run "$tmp/dead.json" --config "$tmp/cpu.ini" --output-dir "$tmp/cpu"
    [ "$rc" -eq 0 ] || { show; fail "run on cpu exited $rc"; }
    run run "$tmp/dead.json" --config "$tmp/acc.ini" --output-dir "$tmp/acc"
    [ "$rc" -eq 0 ] || { show; fail "run on example_acc, cpu exited $rc"; }
    if grep -q "dead_" "$tmp/out"; then show; fail "a dead node ran"; fi
    npy_close "$tmp/acc/y.npy" "$tmp/cpu/y.npy"
    run explain "$tmp/dead.json" --config "$tmp/acc.ini"
    [ "$rc" -eq 0 ] || { show; fail "explain exited $rc"; }
    for n in dead_y dead_x dead_h; do
        grep "^  $n " "$tmp/out" | grep -q "pruned" || { show; fail "explain does not show $n pruned"; }
    done
    write_order_ini all "example_acc, cpu"
    run explain "$tmp/dead.json" --config "$tmp/all.ini"
    [ "$rc" -eq 0 ] || { show; fail "explain (optimize = all) exited $rc"; }
    for n in dead_y dead_x dead_h; do
        grep -q "'$n' removed: no graph output depends on it" "$tmp/out" ||
            { show; fail "explain (optimize = all) does not show $n removed"; }
    done
    ;;
run_alloc_fails)
    # fx_devmem's mem_alloc fails from the first call on: the run's arena.
    need_stage
    [ -n "$devmem" ] && [ -f "$devmem" ] || fail "no fx_devmem fixture given ($devmem)"
    fixture_relu "$devmem" 'order = fx_devmem, cpu\n[fx_devmem]\nfail_alloc = 1'
    run run "$tmp/relu.json" --config "$tmp/backend.ini"
    [ "$rc" -eq 1 ] || { show; fail "run with failing device memory exited $rc, expected 1"; }
    grep -q "cannot allocate [0-9]* bytes on device fx_devmem:0 (module fx_devmem, device 0)" \
        "$tmp/err" || { show; fail "the error does not name the module, device and size"; }
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || { show; fail "more than one line on stderr"; }
    printf 'fail_alloc = 0\n' >>"$tmp/backend.ini"
    run run "$tmp/relu.json" --config "$tmp/backend.ini"
    [ "$rc" -eq 0 ] || { show; fail "run with working device memory exited $rc"; }
    grep -q "act (Relu, fx_devmem)" "$tmp/out" || { show; fail "act did not run on fx_devmem"; }
    ;;
run_measured)
    # fx_serial (tests/fixtures/pinned_module.c, built beside fx_devmem)
    # estimates nothing for its Relu and sleeps 3 ms a run: after 10 runs
    # the node is tried on cpu, and after 10 more it stays there
    # (core/src/measure.h). run prints the warnings its runs made, and its
    # step table says when the plan changed.
    need_stage
    serial="$(dirname "$devmem")/fx_serial.so"
    [ -f "$serial" ] || fail "no fx_serial fixture beside $devmem"
    fixture_relu "$serial" 'order = fx_serial, cpu\nchoose = cost\n[fx_serial]\nsleep_us = 3000\nestimate_us = 0'
    run run "$tmp/relu.json" --config "$tmp/backend.ini" --runs 22
    [ "$rc" -eq 0 ] || { show; fail "run exited $rc"; }
    grep -q "^plinth: warning: .*measured: the subgraph of 1 node(s) it was part of ran .* over the session's first 10 runs" \
        "$tmp/err" || { show; fail "no warning names the measured subgraph"; }
    grep -q "^plinth: warning: measured: .*; the new plan stays" "$tmp/err" ||
        { show; fail "no warning tells the trial's outcome"; }
    grep -q "^steps (the session planned again after run 20" "$tmp/out" ||
        { show; fail "the step table does not say the plan changed"; }
    grep -q "act (Relu, cpu)" "$tmp/out" || { show; fail "act does not run on cpu at the end"; }
    sed 's/^choose = cost$/choose = cost\nmeasure = no/' "$tmp/backend.ini" >"$tmp/no.ini"
    run run "$tmp/relu.json" --config "$tmp/no.ini" --runs 22
    [ "$rc" -eq 0 ] && ! grep -q "measured" "$tmp/err" && grep -q "(fx_serial, 1 nodes from 'act')" "$tmp/out" ||
        { show; fail "with measure = no the plan changed"; }
    ;;
run_nodes)
    # run --nodes: a compiled subgraph of onednn lists its nodes' times
    # under its step (ABI 1.17's compiled_times); fx_serial gives its runs'
    # 3 ms to its one node; a plan of cpu kernels has nothing to list.
    need_stage
    write_order_ini od "onednn, cpu"
    printf 'choose = first\n' >>"$tmp/od.ini"
    run run "$examples/mlp/model.json" --config "$tmp/od.ini" --runs 5 --nodes
    [ "$rc" -eq 0 ] || { show; fail "run --nodes exited $rc"; }
    grep -q "^ *[0-9.]* ms  onednn  *subgraph 0 (onednn, " "$tmp/out" ||
        { show; fail "the model did not run on onednn"; }
    grep -q "^    *[0-9.]* ms    fc1 (Gemm)$" "$tmp/out" && grep -q "^    *[0-9.]* ms    fc2 (Gemm)$" "$tmp/out" ||
        { show; fail "the subgraph's nodes are not listed"; }
    grep -q "node(s) folded into the others' work" "$tmp/out" ||
        { show; fail "the fused nodes are not counted"; }
    serial="$(dirname "$devmem")/fx_serial.so"
    [ -f "$serial" ] || fail "no fx_serial fixture beside $devmem"
    fixture_relu "$serial" 'order = fx_serial, cpu\n[fx_serial]\nsleep_us = 3000'
    run run "$tmp/relu.json" --config "$tmp/backend.ini" --runs 3 --nodes
    [ "$rc" -eq 0 ] || { show; fail "run --nodes on fx_serial exited $rc"; }
    # (3 ms or more: a loaded host oversleeps)
    grep -q "^ *\([3-9]\|[1-9][0-9]\)\.[0-9]* ms    act (Relu)$" "$tmp/out" ||
        { show; fail "act's 3 ms are not listed"; }
    write_order_ini cpu cpu
    run run "$examples/mlp/model.json" --config "$tmp/cpu.ini" --runs 2 --nodes
    [ "$rc" -eq 0 ] || { show; fail "run --nodes on cpu exited $rc"; }
    grep -q "^plinth: --nodes: no compiled subgraph of this plan times its nodes$" "$tmp/err" ||
        { show; fail "no word that nothing times its nodes"; }
    ;;
explain_shape|bench_shape)
    # x is [?,64]: without --shape nothing can be planned.
    need_python
    need_stage
    write_mlp_variant sym 'm["tensors"][0]["shape"] = [-1, 64]'
    write_order_ini acc "example_acc, cpu"
    cmd=${case_name%_shape}
    run "$cmd" "$tmp/sym.json" --config "$tmp/acc.ini"
    [ "$rc" -eq 1 ] || { show; fail "$cmd without --shape exited $rc, expected 1"; }
    if [ "$cmd" = explain ]; then
        run explain "$tmp/sym.json" --config "$tmp/acc.ini" --shape x=3,64
        [ "$rc" -eq 0 ] || { show; fail "explain --shape exited $rc"; }
        grep -q "x: host -> example_acc:0, 768 bytes" "$tmp/out" ||
            { show; fail "explain did not plan x as [3,64] (768 bytes)"; }
        run explain "$tmp/sym.json" --config "$tmp/acc.ini" --shape x=3,65
        [ "$rc" -eq 1 ] || { show; fail "a --shape against a fixed dim exited $rc, expected 1"; }
        grep -q "'x'" "$tmp/err" || { show; fail "the error does not name x"; }
    else
        run bench "$tmp/sym.json" --config "$tmp/acc.ini" --shape x=5,64 --runs 2 --warmup 1 --json
        [ "$rc" -eq 0 ] || { show; fail "bench --shape exited $rc"; }
        tail -n 1 "$tmp/out" | "$python" -c 'import json, sys; j = json.load(sys.stdin); assert j["runs"] == 2 and j["first_run_ms"] > 0' ||
            { show; fail "bench --json did not end with its JSON object (runs, first_run_ms)"; }
    fi
    run "$cmd" "$tmp/sym.json" --config "$tmp/acc.ini" --shape x=3
    [ "$rc" -eq 1 ] || { show; fail "a --shape of the wrong rank exited $rc, expected 1"; }
    run "$cmd" "$tmp/sym.json" --config "$tmp/acc.ini" --shape x=3,b
    [ "$rc" -eq 2 ] || { show; fail "a malformed --shape exited $rc, expected 2"; }
    ;;
run_output_dir)
    need_python
    need_stage
    write_mlp_variant mlp 'pass'
    write_order_ini cpu cpu
    run run "$tmp/mlp.json" --config "$tmp/cpu.ini" --output-dir "$tmp/new/deeper/out/"
    [ "$rc" -eq 0 ] || { show; fail "run --output-dir into a missing folder exited $rc"; }
    [ -f "$tmp/new/deeper/out/y.npy" ] || { show; fail "y.npy was not written"; }
    run run "$tmp/mlp.json" --config "$tmp/cpu.ini" --output-dir "$tmp/new/deeper/out"
    [ "$rc" -eq 0 ] || { show; fail "run --output-dir into an existing folder exited $rc"; }
    : >"$tmp/file"
    run run "$tmp/mlp.json" --config "$tmp/cpu.ini" --output-dir "$tmp/file/out"
    [ "$rc" -eq 1 ] || { show; fail "an --output-dir under a file exited $rc, expected 1"; }
    grep -q "output-dir $tmp/file/out: $tmp/file exists and is not a directory" "$tmp/err" ||
        { show; fail "the error does not say which folder cannot be made and why"; }
    chmod 0500 "$tmp/new"
    run run "$tmp/mlp.json" --config "$tmp/cpu.ini" --output-dir "$tmp/new/other"
    chmod 0700 "$tmp/new"
    if [ "$(id -u)" -ne 0 ]; then
        [ "$rc" -eq 1 ] || { show; fail "an --output-dir in a read-only folder exited $rc"; }
        grep -q "cannot create $tmp/new/other: Permission denied" "$tmp/err" ||
            { show; fail "no reason for the read-only folder"; }
    fi
    ;;
run_dtypes)
    # One Identity per dtype: random inputs, what run prints, the .npy
    # files it writes, and those files read back as inputs.
    need_python
    need_stage
    write_npy_reader
    "$python" - "$tmp/dtypes.json" <<'EOF'
import json, sys
dts = ["f32", "f64", "f16", "bf16", "u8", "i8", "i32", "i64", "bool"]
json.dump({"format": "plinth-graph", "version": 1,
           "opset_import": [{"domain": "", "version": 13}],
           "inputs": ["x_" + d for d in dts], "outputs": ["y_" + d for d in dts],
           "tensors": [{"name": "x_" + d, "dtype": d, "shape": [4, 8]} for d in dts],
           "nodes": [{"name": "id_" + d, "op": "Identity", "inputs": ["x_" + d],
                      "outputs": ["y_" + d]} for d in dts]}, open(sys.argv[1], "w"))
EOF
    write_order_ini cpu cpu
    mkdir "$tmp/out1" "$tmp/out2" "$tmp/out3"
    run run "$tmp/dtypes.json" --config "$tmp/cpu.ini" --output-dir "$tmp/out1"
    [ "$rc" -eq 0 ] || { show; fail "run exited $rc"; }
    cp "$tmp/out" "$tmp/printed"
    "$python" - "$tmp" <<'EOF' || { show; fail "random inputs, printing or .npy output wrong"; }
import re, struct, sys
tmp = sys.argv[1]
sys.path.insert(0, tmp)
import npy
printed = open(tmp + "/printed").read()
descr = {"f32": "<f4", "f64": "<f8", "f16": "<f2", "bf16": "<f4", "u8": "|u1",
         "i8": "|i1", "i32": "<i4", "i64": "<i8", "bool": "|b1"}
for d, want in descr.items():
    m = re.search(r"^output y_%s: (\w+)\[4,8\]\n  \[(.*)\]$" % d, printed, re.M)
    assert m, "no output line for y_%s" % d
    assert m.group(1) == d, "y_%s is labelled %s" % (d, m.group(1))
    shown = m.group(2).replace(", ...", "").split(", ")
    got, shape, v = npy.read("%s/out1/y_%s.npy" % (tmp, d))
    assert got == want and shape == (4, 8), "y_%s.npy is %s%s" % (d, got, shape)
    # Every element filled with a value of the type's range: floats in
    # [-1, 1) and not tiny, integers in [0, 10), booleans both ways.
    if d in ("f32", "f64", "f16", "bf16"):
        assert all(-1.0 <= x < 1.0 for x in v), "y_%s out of [-1, 1): %r" % (d, v)
        assert sum(abs(x) > 0.05 for x in v) >= 16, "y_%s is mostly tiny: %r" % (d, v)
        assert len(set(v)) >= 24, "y_%s repeats: %r" % (d, v)
        for s, x in zip(shown, v):
            assert abs(float(s) - x) <= 1e-5, "y_%s printed %s, file has %r" % (d, s, x)
        if d == "bf16":
            for x in v:
                bits = struct.unpack("<I", struct.pack("<f", x))[0]
                assert bits & 0xffff == 0, "y_bf16 value %r is not a bf16" % x
    elif d == "bool":
        assert set(v) == {False, True}, "y_bool: %r" % (v,)
        assert shown == ["true" if x else "false" for x in v[:8]], "y_bool printed %r" % shown
    else:
        assert all(0 <= x < 10 for x in v) and len(set(v)) > 3, "y_%s: %r" % (d, v)
        assert shown == [str(x) for x in v[:8]], "y_%s printed %r, file %r" % (d, shown, v[:8])
EOF
    # Read back: the outputs become the inputs, and come out unchanged.
    set -- run "$tmp/dtypes.json" --config "$tmp/cpu.ini" --output-dir "$tmp/out2"
    for d in f32 f64 f16 bf16 u8 i8 i32 i64 bool; do
        set -- "$@" --input "x_$d=$tmp/out1/y_$d.npy"
    done
    run "$@"
    [ "$rc" -eq 0 ] || { show; fail "run with every input from .npy exited $rc"; }
    for d in f32 f64 f16 bf16 u8 i8 i32 i64 bool; do
        cmp "$tmp/out1/y_$d.npy" "$tmp/out2/y_$d.npy" || { show; fail "y_$d changed on the way back"; }
    done
    # bf16 also as its bit patterns (<u2).
    "$python" - "$tmp" <<'EOF'
import struct, sys
sys.path.insert(0, sys.argv[1])
import npy
_, _, v = npy.read(sys.argv[1] + "/out1/y_bf16.npy")
bits = [struct.unpack("<I", struct.pack("<f", x))[0] >> 16 for x in v]
head = "{'descr': '<u2', 'fortran_order': False, 'shape': (4, 8), }"
head += " " * (64 - 10 - 1 - len(head)) + "\n"
with open(sys.argv[1] + "/bits.npy", "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) + head.encode())
    f.write(struct.pack("<32H", *bits))
EOF
    run run "$tmp/dtypes.json" --config "$tmp/cpu.ini" --output-dir "$tmp/out3" \
        --input "x_bf16=$tmp/bits.npy"
    [ "$rc" -eq 0 ] || { show; fail "run with bf16 bit patterns exited $rc"; }
    cmp "$tmp/out1/y_bf16.npy" "$tmp/out3/y_bf16.npy" || { show; fail "bf16 from <u2 differs"; }
    # A file of another dtype is refused, naming it.
    run run "$tmp/dtypes.json" --config "$tmp/cpu.ini" --input "x_f16=$tmp/out1/y_f32.npy"
    [ "$rc" -eq 1 ] || { show; fail "an f32 file for an f16 input exited $rc, expected 1"; }
    grep -q "y_f32.npy: holds f32, but input 'x_f16' is f16" "$tmp/err" || { show; fail "no reason"; }
    ;;
run_strings)
    # A model with string inputs and outputs (ONNX, written by the onnx
    # package when the interpreter has it): random words printed, NumPy's
    # <U files read as inputs and written as outputs, a raw .bin refused.
    need_python
    need_stage
    "$python" -c "import onnx, numpy" 2>/dev/null || {
        echo "$case_name: skipped: the interpreter has no onnx or numpy" >&2
        exit 77
    }
    "$python" - "$tmp" <<'EOF'
import sys
import numpy as np
import onnx
from onnx import TensorProto as T, helper as h
vi = h.make_tensor_value_info
g = h.make_graph(
    [h.make_node("Reshape", ["x", "shp"], ["flat"]),
     h.make_node("LabelEncoder", ["x"], ["code"], domain="ai.onnx.ml",
                 keys_strings=["red", "gr\u00fcn"], values_int64s=[1, 2])],
    "g", [vi("x", T.STRING, [2, 2])], [vi("flat", T.STRING, [4]), vi("code", T.INT64, [2, 2])],
    [h.make_tensor("shp", T.INT64, [1], [4])])
m = h.make_model(g, opset_imports=[h.make_opsetid("", 17), h.make_opsetid("ai.onnx.ml", 3)])
m.ir_version = 8
onnx.save(m, sys.argv[1] + "/strings.onnx")
np.save(sys.argv[1] + "/x.npy", np.array([["red", "blue"], ["gr\u00fcn", "x"]]))
EOF
    write_order_ini cpu cpu
    run run "$tmp/strings.onnx" --config "$tmp/cpu.ini"
    [ "$rc" -eq 0 ] || { show; fail "run with random words exited $rc"; }
    grep -q '^output flat: string\[4\]$' "$tmp/out" || { show; fail "no string output line"; }
    grep -q '^  \["[a-z]*", "[a-z]*", "[a-z]*", "[a-z]*"\]$' "$tmp/out" || { show; fail "words not printed"; }
    mkdir "$tmp/o"
    run run "$tmp/strings.onnx" --config "$tmp/cpu.ini" --input "x=$tmp/x.npy" --output-dir "$tmp/o"
    [ "$rc" -eq 0 ] || { show; fail "run with a <U input exited $rc"; }
    "$python" - "$tmp" <<'EOF' || { show; fail "string .npy output wrong"; }
import sys
import numpy as np
flat = np.load(sys.argv[1] + "/o/flat.npy")
assert flat.dtype.kind == "U" and flat.tolist() == ["red", "blue", "gr\u00fcn", "x"], flat
assert np.load(sys.argv[1] + "/o/code.npy").tolist() == [[1, -1], [2, -1]]
EOF
    printf 'abcdefgh' >"$tmp/x.bin"
    run run "$tmp/strings.onnx" --config "$tmp/cpu.ini" --input "x=$tmp/x.bin"
    [ "$rc" -eq 1 ] || { show; fail "a raw .bin for a string input exited $rc, expected 1"; }
    grep -q "input 'x' is a string tensor: give it as .npy (<U)" "$tmp/err" || { show; fail "no reason"; }
    ;;
model_no_outputs)
    need_stage
    write_order_ini cpu cpu
    cat >"$tmp/none.json" <<'EOF'
{"format": "plinth-graph", "version": 1, "opset_import": [{"domain": "", "version": 13}],
 "inputs": ["x"], "outputs": [],
 "tensors": [{"name": "x", "dtype": "f32", "shape": [2, 3]}],
 "nodes": [{"name": "act", "op": "Relu", "inputs": ["x"], "outputs": ["y"]}]}
EOF
    for cmd in run explain; do
        run "$cmd" "$tmp/none.json" --config "$tmp/cpu.ini"
        [ "$rc" -eq 1 ] || { show; fail "$cmd of a model without outputs exited $rc, expected 1"; }
        grep -q "$tmp/none.json: the graph declares no outputs" "$tmp/err" ||
            { show; fail "$cmd: the error does not name the file and the reason"; }
    done
    ;;
configure_call)
    need_stage
    printf '[runtime]\nmodules = %s\n[example_acc]\ndevices = 2\n' "$stage" >"$tmp/backend.ini"
    run --config "$tmp/backend.ini" configure example_acc latency_us=7
    [ "$rc" -eq 0 ] || { show; fail "configure exited $rc"; }
    grep -qx "latency_us = 7" "$tmp/out" || { show; fail "configure did not print latency_us = 7"; }
    grep -qx "power_mode.1 = balanced" "$tmp/out" || { show; fail "no power_mode.1 line"; }
    run --config "$tmp/backend.ini" configure example_acc bogus=1
    [ "$rc" -eq 1 ] || { show; fail "configure with an unknown key exited $rc, expected 1"; }
    grep -q "^plinth: configure: module example_acc: unknown key 'bogus'" "$tmp/err" ||
        { show; fail "the unknown key's error is not one line with one prefix"; }
    run --config "$tmp/backend.ini" configure example_acc latency_us
    [ "$rc" -eq 2 ] || { show; fail "configure with no '=' exited $rc, expected 2"; }
    run --config "$tmp/backend.ini" call example_acc
    [ "$rc" -eq 0 ] || { show; fail "call (list) exited $rc"; }
    grep -qx "set_power_mode i(is)" "$tmp/out" || { show; fail "the list lacks set_power_mode"; }
    run --config "$tmp/backend.ini" call example_acc set_power_mode 1 low_power
    [ "$rc" -eq 0 ] && [ "$(cat "$tmp/out")" = "0" ] || { show; fail "set_power_mode did not print 0"; }
    run --config "$tmp/backend.ini" call example_acc set_power_mode -1 low_power
    [ "$rc" -eq 0 ] && [ "$(cat "$tmp/out")" = "-1" ] || { show; fail "device -1 did not give -1"; }
    run --config "$tmp/backend.ini" call example_acc temperature_c 1
    [ "$rc" -eq 0 ] && [ "$(cat "$tmp/out")" = "46" ] || { show; fail "temperature_c 1 did not print 46"; }
    run --config "$tmp/backend.ini" call example_acc set_power_mode one low_power
    [ "$rc" -eq 2 ] || { show; fail "a non-number exited $rc, expected 2"; }
    grep -q "argument 1 ('one') is not an int32" "$tmp/err" || { show; fail "no reason for 'one'"; }
    run --config "$tmp/backend.ini" call example_acc set_power_mode 1
    [ "$rc" -eq 1 ] || { show; fail "a missing argument exited $rc, expected 1"; }
    grep -q 'takes 2' "$tmp/err" || { show; fail "no reason for the missing argument"; }
    run --config "$tmp/backend.ini" call example_acc reboot
    [ "$rc" -eq 1 ] && grep -q "no function 'reboot'" "$tmp/err" || { show; fail "reboot was not refused"; }
    ;;
cache_command)
    # plinth cache stats|list|clear on a folder the mlp's example_acc
    # subgraph was stored in, then hit from
    need_stage
    mkdir -m 700 "$tmp/cache"
    printf '[runtime]\nmodules = %s\ncache_dir = %s\n[placement]\norder = example_acc, cpu\n' \
        "$stage" "$tmp/cache" >"$tmp/backend.ini"
    run --config "$tmp/backend.ini" run "$examples/mlp/model.json"
    [ "$rc" -eq 0 ] || { show; fail "run exited $rc"; }
    run --config "$tmp/backend.ini" run "$examples/mlp/model.json"
    run --config "$tmp/backend.ini" cache stats
    [ "$rc" -eq 0 ] || { show; fail "cache stats exited $rc"; }
    for line in "entries: 1," "hits: 1" "misses: 1" "stores: 1" "evictions: 0"; do
        grep -q "^$line" "$tmp/out" || { show; fail "cache stats lacks '$line'"; }
    done
    grep -q "of a limit of 4096.00 MiB" "$tmp/out" || { show; fail "no default limit"; }
    run --config "$tmp/backend.ini" cache list
    [ "$rc" -eq 0 ] && grep -q "^example_acc-[0-9a-f]*\.blob " "$tmp/out" ||
        { show; fail "cache list lacks the entry"; }
    run --config "$tmp/backend.ini" cache clear
    [ "$rc" -eq 0 ] && grep -q "^removed 1 entries" "$tmp/out" || { show; fail "cache clear"; }
    run --config "$tmp/backend.ini" cache stats
    grep -q "^entries: 0," "$tmp/out" && grep -q "^stores: 0" "$tmp/out" ||
        { show; fail "the cache is not empty after clear"; }
    run --config "$tmp/backend.ini" cache prune
    [ "$rc" -eq 2 ] || { show; fail "cache prune exited $rc, expected 2"; }
    ;;
*)
    echo "$0: no case named $case_name" >&2
    exit 2
    ;;
esac
echo "$case_name: passed" >&2
