#!/usr/bin/env python3
"""bench/probe_cost.py — what probing module files costs a start.

Runs `plinth modules` with no cache folder (so every start probes), for
each module file alone and for the whole folder, with probe = fork and
probe = none, alternating, and prints the medians: each module's probe
cost, their sum (what probing them one after another would cost), and what
probing them all together costs.

    python3 bench/probe_cost.py [--rounds 25] [--plinth build/bin/plinth] [--modules modules.d]
"""
import argparse
import atexit
import os
import shutil
import statistics
import subprocess
import tempfile
import time

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("--rounds", type=int, default=25)
ap.add_argument("--plinth", default="build/bin/plinth")
ap.add_argument("--modules", default="modules.d")
args = ap.parse_args()
mod_dir = os.path.abspath(args.modules)
tmp = tempfile.mkdtemp(prefix="plinth-probe-")
atexit.register(shutil.rmtree, tmp, ignore_errors=True)


def ini(name, modules, probe):
    path = os.path.join(tmp, f"{name}.ini")
    with open(path, "w") as f:
        f.write(f"[runtime]\nmodules = {modules}\ncache_dir =\nprobe = {probe}\n")
    return path


names = sorted(f[len("libplinth_"):-3] for f in os.listdir(mod_dir)
               if f.startswith("libplinth_") and f.endswith(".so"))
configs = {}
for m in names:
    for probe in ("fork", "none"):
        configs[f"{m}/{probe}"] = ini(f"{m}_{probe}", os.path.join(mod_dir, f"libplinth_{m}.so"),
                                      probe)
for probe in ("fork", "none"):
    configs[f"all/{probe}"] = ini(f"all_{probe}", mod_dir, probe)
times = {k: [] for k in configs}
for _ in range(args.rounds):
    for k, path in configs.items():
        t = time.perf_counter()
        subprocess.run([args.plinth, "--config", path, "modules"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        times[k].append((time.perf_counter() - t) * 1000)
med = {k: statistics.median(v) for k, v in times.items()}
print(f"{'module':14s} {'fork ms':>8s} {'none ms':>8s} {'probe ms':>9s}")
for m in names + ["all"]:
    print(f"{m:14s} {med[m + '/fork']:8.1f} {med[m + '/none']:8.1f} "
          f"{med[m + '/fork'] - med[m + '/none']:9.1f}")
one_by_one = sum(med[m + "/fork"] - med[m + "/none"] for m in names)
print(f"sum of the single-module probes (one after another): {one_by_one:.1f} ms")
print(f"all together: {med['all/fork'] - med['all/none']:.1f} ms")
