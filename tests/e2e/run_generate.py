#!/usr/bin/env python3
"""e2e: generation with decode packages (issue 29; docs/runtime.md, "Decode packages").

For each decode export (tests/data/models/*_decode with decode.json and generate_ref.json):
`tgc compile --decode --max-seq 128`, `tgc inspect` shows the decode info, the states and the
step plan, then `tgc generate --prompt-ids <the reference prompt> --max-new-tokens 32 --json`
must reproduce the reference's new_ids (tools/ort_generate.py's greedy loop; transformers'
generate): all 32 at fp32, the first 16 at fp16 (generate_ref_fp16.json when there is one); the
JSON carries prefill_ms and decode_tokens_per_s > 0. A prompt + new tokens beyond max_seq is
refused naming the cache. Prints one line per test and a last line `generate: N passed, N failed`.
"""
import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODELS = os.path.join(ROOT, "tests", "data", "models")
MAX_SEQ = 128


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


def ids_arg(ids):
    return ",".join(str(i) for i in ids)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tgc", default=os.path.join(ROOT, "bazel-bin", "tools", "tgc"))
    ap.add_argument("--target", default="cpu")
    ap.add_argument("--precision", default="fp32")
    ap.add_argument("--prefix", type=int, default=0,
                    help="new ids that must match (default: 32 at fp32, 16 at fp16/bf16)")
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "generate"))
    ap.add_argument("names", nargs="*")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    c = Counter()
    prefix = args.prefix or (32 if args.precision == "fp32" else 16)
    flags = ["--target", args.target, "--precision", args.precision]
    names = args.names or sorted(
        d for d in os.listdir(MODELS)
        if (d.endswith("_decode") or d.endswith("_decode_dynamo"))
        and os.path.exists(os.path.join(MODELS, d, "decode.json"))
        and os.path.exists(os.path.join(MODELS, d, "generate_ref.json")))
    for name in names:
        mdir = os.path.join(MODELS, name)
        ref = json.load(open(os.path.join(mdir, "generate_ref.json")))
        fp16_ref = os.path.join(mdir, "generate_ref_fp16.json")
        if args.precision != "fp32" and os.path.exists(fp16_ref):
            ref = json.load(open(fp16_ref))
        pkg = os.path.join(args.out, f"{name}-{args.target.replace(':', '_')}-{args.precision}.tgpkg")
        t0 = time.time()
        r = run([args.tgc, "compile", os.path.join(mdir, "model.onnx"), "-o", pkg, "--decode",
                 "--max-seq", str(MAX_SEQ)] + flags)
        c.check(r.returncode == 0, f"{name} compile --decode --max-seq {MAX_SEQ} "
                f"({time.time() - t0:.1f}s)", "" if r.returncode == 0 else r.stderr.strip()[-2000:])
        if r.returncode != 0:
            continue
        r = run([args.tgc, "inspect", pkg])
        text = r.stdout
        ok = r.returncode == 0 and all(k in text for k in
                                       (f"decode:       max_seq {MAX_SEQ}", "states:", "step plan:"))
        c.check(ok, f"{name} inspect shows the decode info, states and step plan",
                "" if ok else (r.stderr.strip() or text[:1500]))
        js = os.path.join(args.out, f"{name}-{args.precision}.json")
        want = ref["new_ids"][:prefix]
        r = run([args.tgc, "generate", pkg, "--prompt-ids", ids_arg(ref["prompt_ids"]),
                 "--max-new-tokens", str(len(ref["new_ids"])), "--json", js])
        if r.returncode != 0:
            c.check(False, f"{name} generate", r.stderr.strip()[-2000:])
            continue
        out = json.load(open(js))
        got = out["new_ids"][:prefix]
        first_diff = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), None)
        c.check(got == want, f"{name} generate: the first {prefix} new ids match the reference "
                f"(prefill {out['prefill_ms']:.2f} ms, decode {out['decode_tokens_per_s']:.0f} "
                f"tokens/s)",
                "" if got == want else f"first difference at {first_diff}: got {got}, want {want}")
        c.check(out["prefill_ms"] > 0 and out["decode_tokens_per_s"] > 0 and
                len(out["new_ids"]) == len(ref["new_ids"]),
                f"{name} generate --json: prefill_ms, decode_tokens_per_s and every new id")
        r = run([args.tgc, "generate", pkg, "--prompt-ids", ids_arg(ref["prompt_ids"]),
                 "--max-new-tokens", str(MAX_SEQ)])
        ok = r.returncode == 1 and "exceed the package's cache" in r.stderr
        c.check(ok, f"{name} prompt + new tokens beyond max_seq refused",
                "" if ok else f"rc {r.returncode}: {r.stderr.strip()[-500:]}")
    print(f"generate: {c.passed} passed, {c.failed} failed")
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())
