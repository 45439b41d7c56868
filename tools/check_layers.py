#!/usr/bin/env python3
"""check_layers.py — data flows one way: no source file includes a header of a higher layer.

Layers, lowest first (docs/design.md):
  runtime/   the runtime and the package schema (runtime/schema/); stands alone
  compiler/  the `tg` dialect and its reference interpreter
  passes/    graph rewrites
  codegen/   buffer planning, the emitters, the package writers
  frontends/ ONNX import (it builds `tg` IR and folds with the interpreter)
  driver/    the pipeline, the compile driver and its options
  tools/     the CLI and the helpers
A file may include its own layer and any lower one. tests/ and third_party/ are exempt. Also
checked: the Bazel deps of every BUILD file in a layer point to the same or a lower layer, and
no source file of a layer is longer than 800 lines (one reader can hold it), and no file but
runtime/Env.cpp reads a TGC_ environment variable itself (runtime/Env.h documents them all).
Prints each violation; last line `layers: N passed, N failed` (one check per file).
"""
import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
LAYERS = ["runtime", "compiler", "passes", "codegen", "frontends", "driver", "tools"]
RANK = {name: i for i, name in enumerate(LAYERS)}
MAX_LINES = 800
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
DEP = re.compile(r'"//([a-z_]+)[/:"]')


def main():
    global ROOT
    if len(sys.argv) > 1:  # another tree (the CLI tests check the checker on one)
        ROOT = os.path.abspath(sys.argv[1])
    passed = failed = 0
    for layer in LAYERS:
        for dirpath, _, files in os.walk(os.path.join(ROOT, layer)):
            for name in sorted(files):
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, ROOT)
                if name.endswith((".cpp", ".h", ".cu", ".cc", ".inc")):
                    targets = INCLUDE.findall(open(path, errors="replace").read())
                    kind = "includes"
                elif name == "BUILD":
                    targets = DEP.findall(open(path).read())
                    kind = "depends on"
                else:
                    continue
                bad = []
                for t in targets:
                    top = t.split("/")[0]
                    if top in RANK and RANK[top] > RANK[layer]:
                        bad.append(t)
                if kind == "includes":
                    text = open(path, errors="replace").read()
                    standalone = rel.startswith(os.path.join("tools", "bench"))  # own processes
                    if rel != os.path.join("runtime", "Env.cpp") and not standalone and re.search(r'getenv\("TGC_', text):
                        bad.append(None)
                        print("FAIL %s reads a TGC_ variable with getenv (use envValue, runtime/Env.h)" % rel)
                    n = text.count("\n")
                    if n > MAX_LINES:
                        bad.append(None)
                        print("FAIL %s has %d lines (at most %d: split it by concept)" %
                              (rel, n, MAX_LINES))
                if bad:
                    failed += 1
                    for t in [t for t in bad if t]:
                        print("FAIL %s (%s) %s %s (%s, a higher layer)" %
                              (rel, layer, kind, t, t.split("/")[0]))
                else:
                    passed += 1
    print("layers: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
