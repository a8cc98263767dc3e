"""examples/app.c and examples/app.py tell the same story and print the same
lines; the output they read equals what `plinth run` writes for the same
input. app.c runs under valgrind when PLINTH_VALGRIND names it (no leak,
no error).

    test_examples.py APP_BINARY PLINTH_CLI MODULE_DIR"""
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    print("numpy is missing: skipped")
    sys.exit(77)

app, cli, modules = sys.argv[1:4]
root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
env = dict(os.environ, PYTHONPATH=os.path.join(root, "python"))
for k in ("PLINTH_CONFIG", "PLINTH_MODULE_PATH"):
    env.pop(k, None)


def run(cmd, **kw):
    p = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        sys.exit(f"FAILED: {' '.join(cmd)} exited {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


valgrind = os.environ.get("PLINTH_VALGRIND")
c_cmd = ([valgrind, "--quiet", "--leak-check=full", "--errors-for-leak-kinds=definite,indirect",
          "--error-exitcode=9"] if valgrind else []) + [app, modules]
c_out = run(c_cmd).stdout
py_out = run([sys.executable, "examples/app.py", modules]).stdout
if c_out != py_out:
    sys.exit(f"FAILED: app.c and app.py differ\n--- app.c\n{c_out}--- app.py\n{py_out}")
for want in ("device example_acc:1 Simulated accelerator 1", "set_power_mode(1, performance) = 0",
             "temperature_c(1) = 61.0", "on example_acc"):
    if want not in c_out:
        sys.exit(f"FAILED: the output lacks {want!r}\n{c_out}")
y_line = [l for l in c_out.splitlines() if l.startswith("y = ")]
y_app = np.array([float(v) for v in y_line[0][4:].split()], dtype=np.float64)

with tempfile.TemporaryDirectory() as tmp:
    x = (0.5 * np.sin(np.arange(64, dtype=np.float32))).reshape(1, 64)
    np.save(os.path.join(tmp, "x.npy"), x)
    ini = os.path.join(tmp, "cli.ini")
    with open(ini, "w") as f:
        f.write(f"[runtime]\nmodules = {modules}\ncache_dir =\n[placement]\n"
                "order = example_acc:1, cpu\n[example_acc]\ndevices = 2\n")
    run([cli, "run", "examples/mlp/model.json", "--config", ini,
         "--input", f"x={tmp}/x.npy", "--output-dir", tmp])
    y_cli = np.load(os.path.join(tmp, "y.npy")).astype(np.float64).ravel()
err = float(np.max(np.abs(y_cli - y_app)))
if err > 1e-6:
    sys.exit(f"FAILED: the apps read {y_app}, plinth run wrote {y_cli} (max diff {err})")
print(f"app.c == app.py, and both match plinth run within {err:.1e}"
      + (" (app.c under valgrind)" if valgrind else ""))
