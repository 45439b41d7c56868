#!/usr/bin/env python3
"""e2e: compile every model in tests/data/models for the CPU and check both test data sets.

Each (model, test_data_set) pair is one test: `tgc compile` then `tgc run --test-data`, which
exits non-zero when any output's relative L2 error exceeds 1e-5 (fp32). Prints one line per test
and a last line `e2e: N passed, N failed`.
"""
import argparse
import os
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tgc", default=os.path.join(ROOT, "bazel-bin", "tools", "tgc"))
    ap.add_argument("--models", default=os.path.join(ROOT, "tests", "data", "models"))
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "e2e"))
    ap.add_argument("names", nargs="*")
    args = ap.parse_args()

    # Models exported with dynamic axes (a shapes.json lists their sets' shapes) run in
    # tests/e2e/run_buckets.py: one package serves all of their sets. Decode exports (a
    # decode.json: KV-cache inputs with a dynamic past length, issue 29) have no one shape either.
    names = args.names or sorted(
        d for d in os.listdir(args.models) if os.path.isdir(os.path.join(args.models, d))
        and not any(os.path.exists(os.path.join(args.models, d, f))
                    for f in ("shapes.json", "decode.json")))
    passed = failed = 0
    for name in names:
        mdir = os.path.join(args.models, name)
        pkg = os.path.join(args.out, name + ".tgpkg")
        t0 = time.time()
        c = subprocess.run([args.tgc, "compile", os.path.join(mdir, "model.onnx"), "-o", pkg],
                           capture_output=True, text=True)
        ct = time.time() - t0
        sets = sorted(d for d in os.listdir(mdir) if d.startswith("test_data_set_"))
        for s in sets:
            label = f"{name}/{s}"
            if c.returncode != 0:
                print(f"FAIL {label}: compile failed ({c.returncode}): {c.stderr.strip()[-2000:]}")
                failed += 1
                continue
            r = subprocess.run([args.tgc, "run", pkg, "--test-data", os.path.join(mdir, s)],
                               capture_output=True, text=True)
            detail = " ".join(l.strip() for l in r.stdout.splitlines() if "rel_l2" in l or "latency" in l)
            if r.returncode == 0:
                passed += 1
                print(f"PASS {label} (compile {ct:.1f}s) {detail}")
            else:
                failed += 1
                print(f"FAIL {label}: {detail} {r.stderr.strip()[-2000:]}")
        sys.stdout.flush()
    print(f"e2e: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
