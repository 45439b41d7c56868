#!/usr/bin/env python3
"""Per-model effect of the rewrite rules: ops and kernels without rules → with rules, and the
compile time of every pass. Prints a Markdown report (docs/model-report.md is this output)."""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
TGC = os.path.join(ROOT, "bazel-bin", "tools", "tgc")


def stats(model, extra):
    with tempfile.TemporaryDirectory() as d:
        js = os.path.join(d, "s.json")
        subprocess.run([TGC, "compile", model, "-o", os.path.join(d, "pkg"), "--stats-json", js]
                       + extra, check=True, capture_output=True)
        return json.load(open(js))


def main():
    mroot = os.path.join(ROOT, "tests", "data", "models")
    names = sys.argv[1:] or sorted(d for d in os.listdir(mroot) if os.path.isdir(os.path.join(mroot, d))
                                   and not any(os.path.exists(os.path.join(mroot, d, f))
                                               for f in ("shapes.json", "decode.json")))
    rows, passes = [], []
    for n in names:
        m = os.path.join(mroot, n, "model.onnx")
        off, on = stats(m, ["--disable-rules=all"]), stats(m, [])
        rows.append((n, off, on))
        passes.append((n, on))
    print("| model | ops after import | ops, no rules → rules | kernels, no rules → rules | rules applied |")
    print("|---|---|---|---|---|")
    for n, off, on in rows:
        hits = ", ".join(f"{k} {v}" for k, v in sorted(on["rules"].items()))
        print(f"| {n} | {on['ops_before']} | {off['ops_after']} → {on['ops_after']} | "
              f"{off['kernels']} → {on['kernels']} | {hits} |")
    print()
    print("Compile time per stage (ms, with rules):")
    print()
    for n, on in passes:
        parts = ", ".join(f"{k} {v * 1e3:.1f}" for k, v in on["pass_seconds"].items())
        print(f"- {n}: {parts}")


if __name__ == "__main__":
    main()
