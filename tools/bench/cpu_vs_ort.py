#!/usr/bin/env python3
"""CPU benchmark: tgc vs ONNX Runtime on the bundled models, at each thread count, same run.

For each model: compile with tgc, then per round and thread count time `tgc bench` (median over
--iters runs) and ONNX Runtime (CPU provider, intra_op_num_threads = the count, graph
optimizations on) over the same inputs; print a table with the ratio (ORT time / tgc time; > 1
means tgc is faster; medians over --rounds interleaved rounds), then the models where tgc is
behind at one thread and where more threads are not faster than one although ORT's are.

    cpu_vs_ort.py --threads 1,2 --rounds 3 --iters 100 [models...]
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


def tgc_bench(tgc, pkg, data, threads, iters, warmup=10):
    """`tgc bench`'s median latency in µs (raises CalledProcessError when it fails)."""
    r = subprocess.run([tgc, "bench", pkg, "--test-data", data, "--iters", str(iters), "--warmup",
                        str(warmup), "--threads", str(threads)], check=True, capture_output=True,
                       text=True)
    return float(re.search(r"median latency: ([0-9.]+) us", r.stdout).group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tgc", default=os.path.join(ROOT, "bazel-bin", "tools", "tgc"))
    ap.add_argument("--threads", default=str(os.cpu_count() or 1),
                    help="thread counts, comma-separated (e.g. 1,2)")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=1,
                    help="interleaved rounds (each model and thread count: tgc, then ORT); the "
                         "table gives the median over the rounds, so a slow phase of the machine "
                         "hits both alike")
    ap.add_argument("names", nargs="*")
    args = ap.parse_args()
    threads = [int(t) for t in args.threads.split(",") if t]
    mroot = os.path.join(ROOT, "tests", "data", "models")
    # By default every bundled model with a fixed shape; the dynamic-axes exports (a shapes.json
    # beside them) are bucket_bench.py's.
    names = args.names or sorted(
        d for d in os.listdir(mroot) if os.path.isdir(os.path.join(mroot, d))
        and not os.path.exists(os.path.join(mroot, d, "shapes.json")))
    ready = []
    for name in names:
        mdir = os.path.join(mroot, name)
        pkg = os.path.join(ROOT, "out", "bench", name + ".tgpkg")
        try:
            subprocess.run([args.tgc, "compile", os.path.join(mdir, "model.onnx"), "-o", pkg],
                           check=True, capture_output=True, text=True)
        except subprocess.CalledProcessError as e:  # one model's failure does not end the table
            print(f"{name}: skipped: {' '.join(e.cmd[:2])} failed: {e.stderr.strip()[:300]}",
                  file=sys.stderr)
            continue
        ready.append((name, pkg, os.path.join(mdir, "model.onnx"),
                      os.path.join(mdir, "test_data_set_0")))
    times = {}  # (name, threads) -> ([tgc µs], [ORT µs])
    for r in range(args.rounds):
        for name, pkg, model, data in ready:
            for th in threads:
                try:
                    t = tgc_bench(args.tgc, pkg, data, th, args.iters, args.warmup)
                except subprocess.CalledProcessError as e:
                    print(f"{name}: tgc bench failed: {e.stderr.strip()[:300]}", file=sys.stderr)
                    continue
                o = time_ort(model, load_inputs(data), th, args.iters, args.warmup)
                ts, os_ = times.setdefault((name, th), ([], []))
                ts.append(t)
                os_.append(o)
                print(f"round {r + 1}: {name} at {th} threads: tgc {t:.1f} us, onnxruntime "
                      f"{o:.1f} us", file=sys.stderr)
    med = {k: (statistics.median(v[0]), statistics.median(v[1])) for k, v in times.items()}
    print(f"| model | threads | tgc (µs) | ONNX Runtime (µs) | ORT / tgc |  (median of "
          f"{args.iters}{f', median of {args.rounds} interleaved rounds' if args.rounds > 1 else ''})")
    print("|---|---|---|---|---|")
    for name, _, _, _ in ready:
        for th in threads:
            if (name, th) in med:
                t, o = med[(name, th)]
                print(f"| {name} | {th} | {t:.1f} | {o:.1f} | {o / t:.2f} |")
    # The CPU bar: tgc no slower than ORT at one thread; more threads faster than one
    # wherever ORT's are.
    behind = [n for n, _, _, _ in ready if (n, 1) in med and med[(n, 1)][0] > med[(n, 1)][1]]
    more = [t for t in threads if t > 1]
    no_gain = [f"{n} at {t}" for n, _, _, _ in ready for t in more
               if (n, 1) in med and (n, t) in med and med[(n, t)][1] < med[(n, 1)][1]
               and med[(n, t)][0] >= med[(n, 1)][0]]
    if 1 in threads:
        print(f"\nat 1 thread, tgc behind ONNX Runtime: {', '.join(behind) or 'none'}")
    if more and 1 in threads:
        print(f"more threads not faster than 1 where ONNX Runtime's are: "
              f"{', '.join(no_gain) or 'none'}")


if __name__ == "__main__":
    main()
