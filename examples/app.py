"""examples/app.py — an application's whole story with an accelerator, in
Python (examples/app.c in C; both print the same lines): load the
accelerator's library by path, list the devices, configure one, call a
vendor function, bind a model to the accelerator, run it, read the output.

    PYTHONPATH=python python3 examples/app.py [MODULE_DIR] [MODEL]

Run it from the tree's root (MODULE_DIR: modules.d, MODEL:
examples/mlp/model.json)."""
import os
import sys

import numpy as np

import plinth

directory = sys.argv[1] if len(sys.argv) > 1 else "modules.d"
model_path = sys.argv[2] if len(sys.argv) > 2 else "examples/mlp/model.json"

# 1. A runtime with no module folder: load what is needed by path.
with plinth.Runtime(config="examples/app.ini") as rt:
    for lib in ("libplinth_cpu.so", "libplinth_json.so", "libplinth_example_acc.so"):
        rt.load_module(os.path.join(directory, lib))

    # 2. The devices.
    for d in rt.devices():
        print(f"device {d.module}:{d.index} {d.name}")

    # 3. Configure the accelerator: no simulated latency.
    acc = rt.device("example_acc", 1)
    settings = acc.configure(latency_us=0)
    for k in ("devices", "latency_us"):
        print(f"configure {k} = {settings[k]}")

    # 4. A vendor function: device 1 to performance mode, then its sensor.
    print(f"set_power_mode(1, performance) = {rt.call('example_acc', 'set_power_mode', 1, 'performance')}")
    print(f"temperature_c(1) = {rt.call('example_acc', 'temperature_c', 1):.1f}")

    # 5. The model, bound to accelerator device 1 (cpu takes the rest).
    with rt.load_model(model_path) as model, model.session(device=acc) as session:
        for step in session.steps():
            print(f"step {step['name']} on {step['backend']}")

        # 6. Run it on a fixed input and read the output.
        x = (0.5 * np.sin(np.arange(64, dtype=np.float32))).reshape(1, 64)
        y = session.run({"x": x})["y"]
        print("y = " + " ".join(f"{v:.6f}" for v in y.ravel()))
