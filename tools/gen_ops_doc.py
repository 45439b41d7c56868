#!/usr/bin/env python3
"""gen_ops_doc.py — writes docs/ops.md from `tgc ops` (the importer's registry), or with --check
says whether docs/ops.md is current. Last line: `ops doc: N passed, N failed`."""
import argparse
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
DOC = os.path.join(ROOT, "docs", "ops.md")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tgc", default=os.path.join(ROOT, "bazel-bin", "tools", "tgc"))
    ap.add_argument("--check", action="store_true", help="compare instead of writing")
    args = ap.parse_args()
    r = subprocess.run([args.tgc, "ops"], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"tgc ops failed: {r.stderr.strip()}")
        print("ops doc: 0 passed, 1 failed")
        return 1
    if not args.check:
        with open(DOC, "w") as f:
            f.write(r.stdout)
        print(f"wrote {DOC}")
        print("ops doc: 1 passed, 0 failed")
        return 0
    current = open(DOC).read() if os.path.exists(DOC) else ""
    ok = current == r.stdout
    if not ok:
        print("docs/ops.md differs from `tgc ops`: run tools/gen_ops_doc.py and commit it")
    print(f"ops doc: {int(ok)} passed, {int(not ok)} failed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
