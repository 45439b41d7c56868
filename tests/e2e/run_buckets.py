#!/usr/bin/env python3
"""e2e: shape buckets. One package per dynamic-axes model serves every test set's shape.

For each model folder with a shapes.json (tests/data/models/*_dyn): `tgc compile` with
`--input-shape input_0=1..8x1..128` (16 buckets), then `tgc run --test-data` on every set
(1x7, 3x20, 4x100, 8x128, 1x1, 2x33, 5x64, 8x1), each one test: the outputs at the set's own
shape within the precision's tolerance. Then: the bucketed package's weights are a single-shape
package's (within 2%), a shape outside the range is refused naming the input, dim and range,
and a graph that padding would change is refused at compile time naming the op.
Prints one line per test and a last line `buckets: N passed, N failed`.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODELS = os.path.join(ROOT, "tests", "data", "models")


class Counter:
    def __init__(self):
        self.passed = self.failed = 0

    def check(self, ok, label, detail=""):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        print(f"{'PASS' if ok else 'FAIL'} {label}{': ' + detail if detail else ''}")
        sys.stdout.flush()


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True)


def weights_bytes(pkg):
    return os.path.getsize(os.path.join(pkg, "weights.bin"))


def mean_over_seq_model(path):
    """ReduceMean over a dynamic seq axis: padding would change it (refused)."""
    import onnx
    from onnx import TensorProto, helper
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])
    node = helper.make_node("ReduceMean", ["x"], ["y"], name="pool_over_seq", axes=[1], keepdims=0)
    g = helper.make_graph([node], "mean_over_seq", [x], [y])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tgc", default=os.path.join(ROOT, "bazel-bin", "tools", "tgc"))
    ap.add_argument("--target", default="cpu")
    ap.add_argument("--precision", default="fp32")
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "buckets"))
    ap.add_argument("names", nargs="*")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    flags = ["--target", args.target, "--precision", args.precision]
    c = Counter()
    names = args.names or sorted(
        d for d in os.listdir(MODELS) if os.path.exists(os.path.join(MODELS, d, "shapes.json")))
    for name in names:
        mdir = os.path.join(MODELS, name)
        shapes = json.load(open(os.path.join(mdir, "shapes.json")))
        pkg = os.path.join(args.out, f"{name}-{args.precision}.tgpkg")
        t0 = time.time()
        r = run([args.tgc, "compile", os.path.join(mdir, "model.onnx"), "-o", pkg,
                 "--input-shape", "input_0=1..8x1..128"] + flags)
        ct = time.time() - t0
        c.check(r.returncode == 0, f"{name} compile 1..8x1..128 ({ct:.1f}s)",
                "" if r.returncode == 0 else r.stderr.strip()[-2000:])
        if r.returncode != 0:
            continue
        for s, shape in sorted(shapes["sets"].items()):
            r = run([args.tgc, "run", pkg, "--test-data", os.path.join(mdir, s)])
            detail = " ".join(l.strip() for l in r.stdout.splitlines() if "rel_l2" in l)
            c.check(r.returncode == 0, f"{name}/{s} {'x'.join(map(str, shape))}",
                    detail + ("" if r.returncode == 0 else " " + r.stderr.strip()[-1500:]))
        # The weights are stored once: a single-shape package's size (within 2%).
        one = os.path.join(args.out, f"{name}-{args.precision}-8x128.tgpkg")
        r = run([args.tgc, "compile", os.path.join(mdir, "model.onnx"), "-o", one,
                 "--input-shape", "input_0=8x128"] + flags)
        if r.returncode == 0:
            wb, ws = weights_bytes(pkg), weights_bytes(one)
            c.check(wb <= ws * 1.02, f"{name} weights stored once",
                    f"bucketed {wb} B, single-shape {ws} B")
        else:
            c.check(False, f"{name} single-shape compile", r.stderr.strip()[-1000:])

    # A run outside the range: a clear error naming the input, the dim and the range.
    if names:
        mdir = os.path.join(MODELS, names[0])
        small = os.path.join(args.out, "small-range.tgpkg")
        r = run([args.tgc, "compile", os.path.join(mdir, "model.onnx"), "-o", small,
                 "--input-shape", "input_0=1..4x1..64", "--buckets", "seq=64"] + flags)
        if r.returncode == 0:
            r = run([args.tgc, "run", small, "--test-data", os.path.join(mdir, "test_data_set_3")])
            msg = r.stderr.strip()
            c.check(r.returncode != 0 and "input_0" in msg and "1..4" in msg,
                    "8x128 refused by a 1..4x1..64 package", msg[-400:])
        else:
            c.check(False, "compile 1..4x1..64", r.stderr.strip()[-1000:])

    # A graph padding would change: refused at compile time, naming the op and the dim.
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "mean.onnx")
        mean_over_seq_model(model)
        r = run([args.tgc, "compile", model, "-o", os.path.join(tmp, "p"),
                 "--input-shape", "x=1..4x1..32x4"] + flags)
        msg = r.stderr.strip()
        c.check(r.returncode != 0 and "pool_over_seq" in msg and "'seq'" in msg
                and not os.path.exists(os.path.join(tmp, "p")),
                "mean over a padded axis refused", msg[-400:])
    print(f"buckets: {c.passed} passed, {c.failed} failed")
    return 0 if c.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
