#!/usr/bin/env python3
"""Seed corpus for fuzz_onnx_import: the test models (tests/data/models) with their weights moved
to external data (so each seed is a few KB of graph, and the weights sit in the harness's base
folder, where the seeds' external-data references resolve), plus the ONNX backend node-test models
(one small model per op). Usage: make_seeds.py CORPUS_DIR BASE_DIR"""
import glob
import os
import shutil
import sys

import onnx

corpus, base = sys.argv[1], sys.argv[2]
os.makedirs(corpus, exist_ok=True)
os.makedirs(base, exist_ok=True)
root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
n = 0
for path in sorted(glob.glob(os.path.join(root, "tests/data/models/*/model.onnx"))):
    name = os.path.basename(os.path.dirname(path))
    m = onnx.load(path)
    tmp = os.path.join(base, name + ".onnx")
    onnx.save_model(m, tmp, save_as_external_data=True, all_tensors_to_one_file=True,
                    location=name + ".bin", size_threshold=256)
    shutil.move(tmp, os.path.join(corpus, name + ".onnx"))
    n += 1
try:
    import onnx.backend.test
    node = os.path.join(os.path.dirname(onnx.backend.test.__file__), "data", "node")
    for path in sorted(glob.glob(os.path.join(node, "*", "model.onnx"))):
        if os.path.getsize(path) <= 16384:
            shutil.copy(path, os.path.join(corpus, os.path.basename(os.path.dirname(path)) + ".onnx"))
            n += 1
except ImportError:
    pass
print(f"make_seeds: {n} seeds in {corpus}")
