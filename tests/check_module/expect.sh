#!/bin/sh
# expect.sh RC REGEX COMMAND...: runs COMMAND, shows its output, and passes
# when it exits RC and its output matches the extended regex REGEX.
want=$1; pattern=$2; shift 2
out=$("$@" 2>&1); rc=$?
printf '%s\n' "$out"
if [ "$rc" != "$want" ]; then
    echo "expect.sh: exit $rc, wanted $want"; exit 1
fi
if ! printf '%s\n' "$out" | tr '\n' ' ' | grep -Eq -- "$pattern"; then
    echo "expect.sh: no line matches: $pattern"; exit 1
fi
echo "expect.sh: exit $rc and output as expected"
