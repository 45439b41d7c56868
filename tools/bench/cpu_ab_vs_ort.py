#!/usr/bin/env python3
"""cpu_ab_vs_ort.py — two tgc builds and ONNX Runtime on the same CPU models, interleaved.

For each round, model and thread count: `tgc bench` with build A (before), with build B
(after), then ONNX Runtime (tools/bench/cpu_vs_ort.py's time_ort), each the median of --iters
runs. The table gives the median over the rounds of each median, so a slow phase of the machine
(another build) hits A, B and ORT alike. Packages are compiled once per build (under
--out/a and --out/b); the conv micro cases of cpu_conv_micro.py are included with --micro.

    cpu_ab_vs_ort.py --a /tmp/tgc_before --b bazel-bin/tools/tgc [--rounds 3] [--threads 1,2]
                     [--iters 50] [--micro] [--micro-names a,b] [models...]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
from cpu_vs_ort import load_inputs, tgc_bench, time_ort  # noqa: E402

DEFAULT_MODELS = ["cnn_small", "mobilenet_v3_tiny", "detector_tiny", "audio_frontend", "vit_tiny",
                  "bert_tiny", "gpt2_tiny", "llama_tiny", "parallel_mlp", "kws_gru", "lstm_tagger"]


def micro_cases(tmp, names=None):
    """The conv micro cases (those in `names` if given) as (name, model path, test-data dir)."""
    import onnx
    from onnx import numpy_helper
    from cpu_conv_micro import CASES
    out = []
    for name, make in CASES.items():
        if names and name not in names:
            continue
        model, feeds = make()
        d = os.path.join(tmp, name)
        data = os.path.join(d, "test_data_set_0")
        os.makedirs(data, exist_ok=True)
        path = os.path.join(d, "model.onnx")
        onnx.save(model, path)
        for i, (k, v) in enumerate(feeds.items()):
            t = numpy_helper.from_array(v, k)
            with open(os.path.join(data, f"input_{i}.pb"), "wb") as f:
                f.write(t.SerializeToString())
        out.append((name, path, data))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", required=True, help="tgc before")
    ap.add_argument("--b", required=True, help="tgc after")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--micro", action="store_true", help="also the conv micro cases")
    ap.add_argument("--micro-names", default="", help="only these micro cases (comma-separated)")
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "bench_ab"))
    ap.add_argument("models", nargs="*")
    args = ap.parse_args()
    threads = [int(t) for t in args.threads.split(",")]
    mroot = os.path.join(ROOT, "tests", "data", "models")
    cases = [(m, os.path.join(mroot, m, "model.onnx"), os.path.join(mroot, m, "test_data_set_0"))
             for m in (args.models or DEFAULT_MODELS)]
    tmp = tempfile.mkdtemp(prefix="cpu_ab_")
    if args.micro or args.micro_names:
        cases += micro_cases(tmp, [n for n in args.micro_names.split(",") if n])
    pkgs = {}
    for name, model, _ in cases:
        for tag, tgc in (("a", args.a), ("b", args.b)):
            pkg = os.path.join(args.out, tag, name + ".tgpkg")
            subprocess.run([tgc, "compile", model, "-o", pkg], check=True, capture_output=True)
            pkgs[(tag, name)] = pkg
    res = {}
    for r in range(args.rounds):
        for name, model, data in cases:
            inputs = load_inputs(data)
            for t in threads:
                a = tgc_bench(args.a, pkgs[("a", name)], data, t, args.iters)
                b = tgc_bench(args.b, pkgs[("b", name)], data, t, args.iters)
                o = time_ort(model, inputs, t, args.iters, 5)
                for k, v in (("a", a), ("b", b), ("o", o)):
                    res.setdefault((name, t, k), []).append(v)
                print(f"round {r} {name} t{t}: before {a:.1f} after {b:.1f} ort {o:.1f}",
                      file=sys.stderr, flush=True)
    print(f"| model | threads | tgc before (µs) | tgc after (µs) | ORT (µs) | after/before | "
          f"ORT / tgc after |  (median of {args.rounds} interleaved rounds, each a median of "
          f"{args.iters})")
    print("|---|---|---|---|---|---|---|")
    for name, _, _ in cases:
        for t in threads:
            a, b, o = (statistics.median(res[(name, t, k)]) for k in "abo")
            print(f"| {name} | {t} | {a:.0f} | {b:.0f} | {o:.0f} | {b / a:.2f} | {o / b:.2f} |")


if __name__ == "__main__":
    main()
