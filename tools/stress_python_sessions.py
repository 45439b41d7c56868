"""stress_python_sessions.py — compiles and runs bert_tiny, gpt2_tiny and parallel_mlp through the
installed Python wheel (`tgc.compile`, `tgc.Session`) N times in one process, each round with a
fresh kernel cache, and reports every output off its reference (rel-L2 >= 1e-5). It chases a
wrong result seen once in CI (caf74d9: gpt2_tiny, test set 0, rel-L2 1.01) and not since.

    python3 -m venv --system-site-packages V && V/bin/pip install --no-deps --no-index \
        bazel-bin/python/tgc-*.whl && V/bin/python tools/stress_python_sessions.py 20

Run two at once to load both cores. Exits 1 when any output was off.
"""
import glob
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper
import tgc
models = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "models")
def read_set(model, n):
    d = os.path.join(models, model, f"test_data_set_{n}")
    load = lambda f: numpy_helper.to_array(onnx.load_tensor(f))
    return ([load(f) for f in sorted(glob.glob(d + "/input_*.pb"))],
            [load(f) for f in sorted(glob.glob(d + "/output_*.pb"))])
def rel(g, w):
    g, w = np.asarray(g, np.float64), np.asarray(w, np.float64)
    return float(np.linalg.norm(g - w) / np.linalg.norm(w))
bad = 0
for it in range(int(sys.argv[1])):
    tmp = tempfile.mkdtemp(prefix="pys-")
    cache = os.path.join(tmp, "cache")
    for model in ("bert_tiny", "gpt2_tiny", "parallel_mlp"):
        r = tgc.compile(os.path.join(models, model, "model.onnx"), os.path.join(tmp, model + ".tgpkg"), cache_dir=cache)
        s = tgc.Session(r)
        for n in (0, 1):
            ins, want = read_set(model, n)
            got = s.run(dict(zip(s.input_names, ins)))
            e = max(rel(o, w) for o, w in zip(got.values(), want))
            if e > 1e-5:
                bad += 1
                print(f"iter {it} {model} set {n}: rel_l2 {e}", flush=True)
print("bad", bad)
sys.exit(1 if bad else 0)
