#!/bin/sh
# test_cli.sh — the `plinth` command-line program as an operator uses it:
# version and help, exit codes, and `plinth modules` (table and JSON) over the
# staged modules, including a module copy that is writable by others, and the
# log level backend.ini sets.
#
# usage: test_cli.sh CASE PLINTH_BINARY STAGE_DIR PYTHON3
#   PYTHON3 may be "" or CMake's ...-NOTFOUND when none was found; the JSON
#   cases then skip (77).
set -eu

if [ $# -lt 4 ]; then
    echo "usage: $0 CASE PLINTH_BINARY STAGE_DIR PYTHON3" >&2
    exit 2
fi
case_name=$1
plinth=$2
stage=$3
python=$4

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

case "$case_name" in
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
*)
    echo "$0: no case named $case_name" >&2
    exit 2
    ;;
esac
echo "$case_name: passed" >&2
