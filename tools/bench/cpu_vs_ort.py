#!/usr/bin/env python3
"""CPU benchmark: tgc vs ONNX Runtime on the bundled models, same thread count, one run.

For each model: compile with tgc, time `tgc bench` (median over --iters runs), time ONNX Runtime
(CPU provider, intra_op_num_threads = --threads, graph optimizations on) over the same inputs,
and print a table with the ratio (ORT time / tgc time; > 1 means tgc is faster).
"""
import argparse
import glob
import os
import re
import statistics
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def load_inputs(test_dir):
    import onnx
    from onnx import numpy_helper
    ins = []
    for f in sorted(glob.glob(os.path.join(test_dir, "input_*.pb")),
                    key=lambda p: int(re.findall(r"(\d+)\.pb$", p)[0])):
        t = onnx.TensorProto()
        t.ParseFromString(open(f, "rb").read())
        ins.append((t.name, numpy_helper.to_array(t)))
    return ins


def time_ort(model, inputs, threads, iters, warmup):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    s = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    feed = {i.name: v for i, (_, v) in zip(s.get_inputs(), inputs)}
    for _ in range(warmup):
        s.run(None, feed)
    ts = []
    for _ in range(iters):
        t0 = time.perf_counter()
        s.run(None, feed)
        ts.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tgc", default=os.path.join(ROOT, "bazel-bin", "tools", "tgc"))
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("names", nargs="*")
    args = ap.parse_args()
    mroot = os.path.join(ROOT, "tests", "data", "models")
    # By default every bundled model with a fixed shape; the dynamic-axes exports (a shapes.json
    # beside them) are bucket_bench.py's.
    names = args.names or sorted(
        d for d in os.listdir(mroot) if os.path.isdir(os.path.join(mroot, d))
        and not os.path.exists(os.path.join(mroot, d, "shapes.json")))
    rows = []
    for name in names:
        mdir = os.path.join(mroot, name)
        pkg = os.path.join(ROOT, "out", "bench", name + ".tgpkg")
        model = os.path.join(mdir, "model.onnx")
        data = os.path.join(mdir, "test_data_set_0")
        try:
            subprocess.run([args.tgc, "compile", model, "-o", pkg], check=True, capture_output=True,
                           text=True)
            r = subprocess.run([args.tgc, "bench", pkg, "--test-data", data, "--iters",
                                str(args.iters), "--warmup", str(args.warmup), "--threads",
                                str(args.threads)], check=True, capture_output=True, text=True)
        except subprocess.CalledProcessError as e:  # one model's failure does not end the table
            print(f"{name}: skipped: {' '.join(e.cmd[:2])} failed: {e.stderr.strip()[:300]}",
                  file=sys.stderr)
            continue
        tgc_us = float(re.search(r"median latency: ([0-9.]+) us", r.stdout).group(1))
        ort_us = time_ort(model, load_inputs(data), args.threads, args.iters, args.warmup)
        rows.append((name, tgc_us, ort_us))
        print(f"{name}: tgc {tgc_us:.1f} us, onnxruntime {ort_us:.1f} us", file=sys.stderr)
    print(f"| model | tgc (µs) | ONNX Runtime (µs) | ORT / tgc |  ({args.threads} threads, median of {args.iters})")
    print("|---|---|---|---|")
    for name, t, o in rows:
        print(f"| {name} | {t:.1f} | {o:.1f} | {o / t:.2f} |")


if __name__ == "__main__":
    main()
