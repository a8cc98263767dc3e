#!/usr/bin/env bash
# bench/vs_ort.sh — times Plinth and ONNX Runtime on the same models, in the
# same run, alternating between them so that both see the same machine load.
#
#   bench/vs_ort.sh [--threads N] [--rounds R] [--runs N] [--config FILE] MODEL.onnx...
#
# Needs build/bin/plinth (bash tools/dev.sh demo builds it) and ONNX Runtime's
# Python package, timed by ../shared/bench/peer_bench.py the way `plinth
# bench` times Plinth:
#   python3 -m venv --system-site-packages /tmp/ortenv && /tmp/ortenv/bin/pip install onnxruntime
# ORT_PYTHON (default: /tmp/ortenv/bin/python if it exists, else python3) and
# PEER_BENCH (default ../shared/bench/peer_bench.py) locate them. MODEL.input.bin
# beside each model is the input of both. Prints a table: model, Plinth median
# ms, ORT median ms, ratio (Plinth / ORT), each the median over R alternating
# rounds.
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=2 ROUNDS=3 RUNS=30 CONFIG=()
while [ $# -gt 0 ]; do
    case "$1" in
    --threads) THREADS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    --config) CONFIG=(--config "$2"); shift 2 ;;
    -*) echo "vs_ort.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
    esac
done
[ $# -gt 0 ] || { echo "usage: bench/vs_ort.sh [--threads N] [--rounds R] [--runs N] [--config FILE] MODEL.onnx..." >&2; exit 2; }
PLINTH=${PLINTH:-build/bin/plinth}
if [ -z "${ORT_PYTHON:-}" ]; then
    if [ -x /tmp/ortenv/bin/python ]; then ORT_PYTHON=/tmp/ortenv/bin/python; else ORT_PYTHON=python3; fi
fi
PEER_BENCH=${PEER_BENCH:-../shared/bench/peer_bench.py}
[ -x "$PLINTH" ] || { echo "vs_ort.sh: $PLINTH not built" >&2; exit 1; }
[ -f "$PEER_BENCH" ] || { echo "vs_ort.sh: $PEER_BENCH not found" >&2; exit 1; }
"$ORT_PYTHON" -c 'import onnxruntime, numpy' 2>/dev/null || { echo "vs_ort.sh: $ORT_PYTHON cannot import onnxruntime and numpy (see the header of this script)" >&2; exit 1; }

median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
field() { python3 -c 'import json,sys; d=json.loads(sys.stdin.read().strip().splitlines()[-1]); print(d[sys.argv[1]])' "$1"; }

printf "%-16s %12s %12s %8s %10s %10s\n" model plinth_ms ort_ms ratio plinth_p90 ort_p90
for model in "$@"; do
    name=$(basename "$model" .onnx)
    p=() o=() pp=() op=()
    for ((r = 0; r < ROUNDS; r++)); do
        pj=$("$PLINTH" bench "$model" "${CONFIG[@]}" --threads "$THREADS" --runs "$RUNS" --warmup 5 --json 2>/dev/null | tail -1) || { echo "$name: plinth failed" >&2; pj=""; }
        oj=$("$ORT_PYTHON" "$PEER_BENCH" "$model" --runtime ort --threads "$THREADS" --runs "$RUNS" --warmup 5 2>/dev/null | tail -1) || { echo "$name: ort failed" >&2; oj=""; }
        [ -n "$pj" ] && p+=("$(echo "$pj" | field median_ms)") && pp+=("$(echo "$pj" | field p90_ms)")
        [ -n "$oj" ] && o+=("$(echo "$oj" | field median_ms)") && op+=("$(echo "$oj" | field p90_ms)")
    done
    pm=$([ ${#p[@]} -gt 0 ] && printf "%s\n" "${p[@]}" | median || echo nan)
    om=$([ ${#o[@]} -gt 0 ] && printf "%s\n" "${o[@]}" | median || echo nan)
    ppm=$([ ${#pp[@]} -gt 0 ] && printf "%s\n" "${pp[@]}" | median || echo nan)
    opm=$([ ${#op[@]} -gt 0 ] && printf "%s\n" "${op[@]}" | median || echo nan)
    ratio=$(awk -v a="$pm" -v b="$om" 'BEGIN { if (a == "nan" || b == "nan" || b == 0) print "n/a"; else printf "%.2f", a / b }')
    printf "%-16s %12s %12s %8s %10s %10s\n" "$name" "$pm" "$om" "$ratio" "$ppm" "$opm"
done
