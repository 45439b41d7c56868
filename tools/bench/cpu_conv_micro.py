#!/usr/bin/env python3
"""cpu_conv_micro.py — single convolutions, tgc vs ONNX Runtime on the CPU, same thread count.

Each case is a one-node Conv model (random weights, built with onnx.helper through
tests/e2e/ops_vs_ort_conv.py's conv_case): a 5x5 depthwise conv over 240 channels at 14x14
(issue 26's measurement), a 3x3 depthwise at stride 2, a regular 3x3 and a 1x1; two
ConvTranspose layers at stride 2 (tests/e2e/ops_vs_ort_convtranspose.py's convtranspose_case). tgc's time is
`tgc bench`'s median, ORT's the median of as many runs (tools/bench/cpu_vs_ort.py's time_ort).

    cpu_conv_micro.py [--threads N] [--iters N] [--tgc PATH] [names...]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import onnx
from onnx import numpy_helper

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
sys.path.insert(0, os.path.dirname(__file__))
from ops_vs_ort_conv import conv_case  # noqa: E402
from ops_vs_ort_convtranspose import convtranspose_case  # noqa: E402
from cpu_vs_ort import time_ort  # noqa: E402

CASES = {
    "dw5x5_240ch_14x14": lambda: conv_case([1, 240, 14, 14], [240, 1, 5, 5], group=240,
                                           pads=[2, 2, 2, 2]),
    "dw3x3_s2_96ch_56x56": lambda: conv_case([1, 96, 56, 56], [96, 1, 3, 3], group=96,
                                             strides=[2, 2], pads=[1, 1, 1, 1]),
    "conv3x3_64ch_28x28": lambda: conv_case([1, 64, 28, 28], [64, 64, 3, 3], pads=[1, 1, 1, 1]),
    "conv1x1_128ch_28x28": lambda: conv_case([1, 128, 28, 28], [128, 128, 1, 1]),
    # detector_tiny's upsampling layer, and an odd kernel (phases of 2 and 1 taps)
    "convt4x4_s2_32to16_32x32": lambda: convtranspose_case([1, 32, 32, 32], [32, 16, 4, 4],
                                                           strides=[2, 2], pads=[1, 1, 1, 1]),
    "convt3x3_s2_64to32_28x28": lambda: convtranspose_case([1, 64, 28, 28], [64, 32, 3, 3],
                                                           strides=[2, 2], pads=[1, 1, 1, 1],
                                                           output_padding=[1, 1]),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tgc", default=os.path.join(ROOT, "bazel-bin", "tools", "tgc"))
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("names", nargs="*")
    args = ap.parse_args()
    print(f"| case | tgc (µs) | ONNX Runtime (µs) | ORT / tgc |  ({args.threads} threads, "
          f"median of {args.iters})")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.names or CASES:
            model, feeds = CASES[name]()
            path = os.path.join(tmp, name + ".onnx")
            onnx.save(model, path)
            npy = os.path.join(tmp, name + "_x.pb")
            with open(npy, "wb") as f:
                f.write(numpy_helper.from_array(feeds["x"], "x").SerializeToString())
            pkg = os.path.join(tmp, name + ".tgpkg")
            subprocess.run([args.tgc, "compile", path, "-o", pkg], check=True, capture_output=True)
            r = subprocess.run([args.tgc, "bench", pkg, "--input", "x=@" + npy, "--iters",
                                str(args.iters), "--warmup", str(args.warmup), "--threads",
                                str(args.threads)], check=True, capture_output=True, text=True)
            t = float(re.search(r"median latency: ([0-9.]+) us", r.stdout).group(1))
            o = time_ort(path, [("x", feeds["x"])], args.threads, args.iters, args.warmup)
            print(f"| {name} | {t:.1f} | {o:.1f} | {o / t:.2f} |", flush=True)


if __name__ == "__main__":
    main()
