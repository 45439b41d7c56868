#!/usr/bin/env python3
"""check_codegen_identical.py — the generated kernels and plans of every bundled model, compared
with the recorded ones (tests/e2e/codegen_manifest.txt): a refactoring that means to change no
behaviour must leave them byte-identical.

For each model in tests/data/models it compiles a CPU package (fp32) and CUDA packages
(cuda:sm_90, fp32 and fp16; NVRTC, no GPU needed) and hashes the generated source (kernels.cpp /
kernels.cu) and the plan as text (plan.txt without its `kernels:` line, whose checksum is of the
host compiler's or NVRTC's binary, not of tgc's output). A change that is meant to alter
generated code records the new hashes with --update, and the manifest's diff shows which models
it touched.
Last line: `codegen identical: N passed, N failed`.
"""
import argparse
import hashlib
import os
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MANIFEST = os.path.join(ROOT, "tests", "e2e", "codegen_manifest.txt")
CONFIGS = [("cpu:x86-64-v3", "fp32", "kernels.cpp"), ("cuda:sm_90", "fp32", "kernels.cu"),
           ("cuda:sm_90", "fp16", "kernels.cu")]


def digest(path, drop_prefix=None):
    with open(path, "rb") as f:
        data = f.read()
    if drop_prefix:
        data = b"\n".join(l for l in data.split(b"\n") if not l.startswith(drop_prefix))
    return hashlib.sha256(data).hexdigest()[:16]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tgc", default=os.path.join(ROOT, "bazel-bin", "tools", "tgc"))
    ap.add_argument("--update", action="store_true", help="record the current hashes")
    args = ap.parse_args()
    models_dir = os.path.join(ROOT, "tests", "data", "models")
    got, broken = {}, set()
    failed = 0
    with tempfile.TemporaryDirectory(prefix="tgc_identical_") as tmp:
        for m in sorted(os.listdir(models_dir)):
            onnx_path = os.path.join(models_dir, m, "model.onnx")
            if not os.path.exists(onnx_path) or any(os.path.exists(
                    os.path.join(models_dir, m, f)) for f in ("shapes.json", "decode.json")):  # dynamic axes: no one shape
                continue
            for target, precision, src in CONFIGS:
                key = "%s %s %s" % (m, target, precision)
                pkg = os.path.join(tmp, "%s_%s_%s" % (m, target.replace(":", "_"), precision))
                r = subprocess.run([args.tgc, "compile", onnx_path, "-o", pkg, "--target=" + target,
                                    "--precision=" + precision], capture_output=True, text=True)
                if r.returncode != 0:
                    print("FAIL %s: compile: %s" % (key, r.stderr[-300:]))
                    failed += 1
                    broken.add(key)
                    continue
                got[key] = "%s %s" % (digest(os.path.join(pkg, src)),
                                      digest(os.path.join(pkg, "plan.txt"), b"kernels:"))
    if args.update:
        with open(MANIFEST, "w") as f:
            f.write("# model target precision: sha256[:16] of the kernels' source, of plan.txt "
                    "(without its kernels: line)\n# tests/e2e/check_codegen_identical.py --update\n")
            for k in sorted(got):
                f.write("%s: %s\n" % (k, got[k]))
        print("recorded %d configurations in %s" % (len(got), MANIFEST))
    want = {}
    with open(MANIFEST) as f:
        for line in f:
            if line.startswith("#") or ":" not in line:
                continue
            k, v = line.rsplit(": ", 1)
            want[k] = v.strip()
    passed = 0
    for k in sorted(set(want) | set(got)):
        if k not in got:
            if k not in broken:
                print("FAIL %s: recorded, but the model is gone" % k)
                failed += 1
            continue
        if want.get(k) == got[k]:
            passed += 1
        else:
            what = "new, not recorded" if k not in want else "source/plan %s, recorded %s" % (got[k], want[k])
            print("FAIL %s: %s" % (k, what))
            failed += 1
    print("codegen identical: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
