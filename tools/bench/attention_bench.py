#!/usr/bin/env python3
"""attention_bench.py — tgc's CUDA attention alone against PyTorch's SDPA, on the GPU machine.

For each shape (heads × S = L, head dim 64, batch 1): an attention-only ONNX model
(q, k, v → MatMul(q, kᵀ) · scale → Softmax → MatMul(·, v)), its reference output from NumPy,
`tgc compile --precision fp16`, `tgc run` against the reference, and `tgc bench --omit attention`
(the attention step's cost inside the package's CUDA graph); then
torch.nn.functional.scaled_dot_product_attention at fp16 on the same shape, 20 calls captured in a
CUDA graph and replayed 10 times between two events. Prints one line per shape (µs).

    python3 tools/bench/attention_bench.py --tgc <tgc> [--shapes whisper=6x1500,gpt2=12x512,bert8=96x128]
"""
import argparse
import os
import re
import subprocess
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def write_model(folder, heads, seq, dim=64, seed=0):
    """The attention-only model and one test data set (input_0..2, output_0) in `folder`."""
    io = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, heads, seq, dim]) for n in "qkvo"]
    scale = numpy_helper.from_array(np.array(1 / np.sqrt(dim), np.float32), "scale")
    nodes = [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
             helper.make_node("MatMul", ["q", "kt"], ["s"]),
             helper.make_node("Mul", ["s", "scale"], ["ss"]),
             helper.make_node("Softmax", ["ss"], ["p"], axis=-1),
             helper.make_node("MatMul", ["p", "v"], ["o"])]
    graph = helper.make_graph(nodes, "attention", io[:3], io[3:], [scale])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
              os.path.join(folder, "model.onnx"))
    data = os.path.join(folder, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((1, heads, seq, dim)).astype(np.float32) for _ in range(3))
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(dim)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    for i, (x, n) in enumerate(((q, "q"), (k, "k"), (v, "v"))):
        open(os.path.join(data, f"input_{i}.pb"), "wb").write(
            numpy_helper.from_array(x, n).SerializeToString())
    open(os.path.join(data, "output_0.pb"), "wb").write(
        numpy_helper.from_array((p @ v).astype(np.float32), "o").SerializeToString())
    return data


def sdpa_us(heads, seq, dim=64):
    """PyTorch's fp16 SDPA on the shape: 20 calls in a CUDA graph, 10 replays, µs per call."""
    import torch
    import torch.nn.functional as F
    q, k, v = (torch.randn(1, heads, seq, dim, device="cuda", dtype=torch.float16) for _ in range(3))
    for _ in range(10):
        F.scaled_dot_product_attention(q, k, v)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(20):
            F.scaled_dot_product_attention(q, k, v)
    g.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(10):
        g.replay()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / 200 * 1000.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tgc", default="bazel-bin/tools/tgc")
    ap.add_argument("--shapes", default="whisper=6x1500,gpt2=12x512,bert8=96x128")
    ap.add_argument("--no-torch", action="store_true", help="skip PyTorch's SDPA")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for item in args.shapes.split(","):
            name, shape = item.split("=")
            heads, seq = (int(x) for x in shape.split("x"))
            folder = os.path.join(tmp, name)
            os.makedirs(folder)
            data = write_model(folder, heads, seq)
            pkg = os.path.join(folder, "pkg")
            subprocess.run([args.tgc, "compile", os.path.join(folder, "model.onnx"), "-o", pkg,
                            "--target", "cuda:sm_90", "--precision", "fp16", "--no-cache"],
                           check=True, capture_output=True)
            run = subprocess.run([args.tgc, "run", pkg, "--test-data", data, "--tolerance", "1e-2"],
                                 capture_output=True, text=True)
            err = re.search(r"rel_l2=([0-9.e+-]+)", run.stdout)
            bench = subprocess.run([args.tgc, "bench", pkg, "--test-data", data, "--iters", "100",
                                    "--warmup", "10", "--omit", "attention"],
                                   capture_output=True, text=True)
            cost = re.search(r"cost ([0-9.]+) us", bench.stdout)
            line = (f"{name} ({heads} heads x {seq}): tgc attention "
                    f"{cost.group(1) if cost else 'n/a'} us in the graph, "
                    f"{'PASS' if run.returncode == 0 else 'FAIL'} "
                    f"rel_l2={err.group(1) if err else 'n/a'}")
            if not args.no_torch:
                line += f"; PyTorch SDPA {sdpa_us(heads, seq):.1f} us"
            print(line, flush=True)


if __name__ == "__main__":
    main()
