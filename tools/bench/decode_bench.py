#!/usr/bin/env python3
"""Decode benchmark (issue 29): `tgc generate` on a decode package against transformers'
`generate` with a static KV cache, eager and under torch.compile(mode="reduce-overhead").

Runs on the GPU machine, in one command (bounded by --budget-s). For each model (gpt2 = GPT2Config(),
llama_small = ../shared/bench/anchors.py's LlamaConfig; random weights, seed 29):

1. Build the Hugging Face causal LM and export the decoder-with-past ONNX (fp32 weights,
   TorchScript exporter, opset 17) with tools/make_decode_models.py's wrapper and export code.
2. `tgc compile --decode --max-seq 256 --target cuda:sm_90 --precision fp16 --no-cache` (timed),
   then `tgc generate` with a 128-token prompt (random ids, seed 29) and --max-new-tokens 64,
   --tgc-runs times (default 2); the last run is reported (the first pays for the lazy CUDA graph
   capture and the GEMM tuning): prefill ms (128 tokens) and decode tokens/s (63 steps / decode
   time, as `tgc generate --json` reports them).
3. The reference, fp16 on the same GPU, batch 1, the same prompt, each mode in a subprocess (so a
   torch.compile that runs too long is cut off and its cell skipped with a note, not the run):
   `model.generate(ids, max_new_tokens=n, min_new_tokens=n, do_sample=False,
   past_key_values=cache)`, cache = one StaticCache(config, max_cache_len=256) reset before each
   call, its tensors made by one eager generate first (made inside the compiled forward they are
   CUDA-graph outputs that the next replay overwrites: "accessing tensor output of CUDAGraphs that
   has been overwritten");
   eager: `generation_config.disable_compile = True` (transformers otherwise compiles the forward
   by itself whenever the cache is static);
   reduce-overhead: the HF static-cache recipe, `model.forward = torch.compile(model.forward,
   mode="reduce-overhead", fullgraph=True)` (disable_compile too, so that generate runs this
   compiled forward and does not wrap it in a compile of its own), warmed up by generate calls.
   t64 and t1 = the median over --reps generate calls of 64 and of 1 new token, after warm-up,
   torch.cuda.synchronize() around each (time.perf_counter); decode tokens/s = 63 / (t64 - t1),
   prefill ms = t1.
4. tgc's first 16 new ids against the eager reference's (fp16 greedy; later ids may diverge).

Prints a Markdown table and writes it to $OUT/decode_table.md (and the raw figures to
$OUT/decode_results.json).

  python3 tools/bench/decode_bench.py --tgc /tmp/b/slim/tgc [gpt2 llama_small]

(2026-11-27: fp16 decode packages were refused by the CUDA runtime at load, a COPY step in the
prefill buckets; the logged run used --precision fp32 for tgc. docs/perf-log.md, "Decode".)
"""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SEED = 29
PROMPT_LEN, NEW_TOKENS, MAX_SEQ, CHECK_IDS = 128, 64, 256, 16
T0 = time.time()


def log(msg):
    print(f"[{time.time() - T0:6.1f}s] {msg}", flush=True)


def build(name):
    """The causal LM of `name` with random weights (seed 29), eos/pad/bos off, fp32 on the CPU."""
    import torch
    import transformers as tf
    if name == "gpt2":
        cls, cfg = tf.GPT2LMHeadModel, tf.GPT2Config()
    elif name == "llama_small":
        cls, cfg = tf.LlamaForCausalLM, tf.LlamaConfig(
            hidden_size=1024, intermediate_size=2816, num_hidden_layers=8, num_attention_heads=16,
            num_key_value_heads=16, vocab_size=32000)
    else:
        raise SystemExit(f"unknown model {name} (gpt2, llama_small)")
    torch.manual_seed(SEED)
    m = cls(cfg).eval()
    for c in (m.config, m.generation_config):
        c.eos_token_id = None
        c.pad_token_id = None
        c.bos_token_id = None
    return m


def prompt_ids(vocab):
    import torch
    g = torch.Generator().manual_seed(SEED)
    return torch.randint(0, vocab, (1, PROMPT_LEN), generator=g)[0].tolist()


# ---------------------------------------------------------------------------------------------
# Reference worker (a subprocess per model and mode).

def ref_worker(name, mode, prompt_path, out_path, reps):
    import torch
    import transformers
    res = {"mode": mode, "torch": torch.__version__, "transformers": transformers.__version__}
    m = build(name).half().cuda()
    ids = torch.tensor([json.load(open(prompt_path))], dtype=torch.int64, device="cuda")
    mask = torch.ones_like(ids)
    # One StaticCache of MAX_SEQ positions (tgc's --max-seq), passed to every generate and reset
    # before each. Its tensors are made (lazily, on the first update) by an eager generate before
    # the forward is compiled: made inside the compiled forward they would be CUDA-graph outputs,
    # which the next replay overwrites (transformers' own auto-compile keeps prefill eager too).
    from transformers import StaticCache
    try:
        cache = StaticCache(config=m.config, max_cache_len=MAX_SEQ)
    except TypeError:  # 4.x signature
        cache = StaticCache(config=m.config, max_batch_size=1, max_cache_len=MAX_SEQ,
                            device="cuda", dtype=torch.float16)
    m.generation_config.disable_compile = True  # eager stays eager; ro runs our compiled forward

    def gen(n):
        with torch.inference_mode():  # the cache's tensors are inference tensors
            cache.reset()
            return m.generate(ids, attention_mask=mask, max_new_tokens=n, min_new_tokens=n,
                              do_sample=False, num_beams=1, past_key_values=cache)

    gen(2)  # eager: initializes the cache's tensors
    if mode == "reduce-overhead":
        m.forward = torch.compile(m.forward, mode="reduce-overhead", fullgraph=True)

    def timed(n):
        torch.cuda.synchronize()
        t = time.perf_counter()
        out = gen(n)
        torch.cuda.synchronize()
        return time.perf_counter() - t, out

    # Warm-up: 64, 1, 64, 1, 64; under reduce-overhead the first calls compile (prefill at 128
    # tokens, the step at 1) and record the graphs.
    t = time.time()
    warm = []
    for n in (NEW_TOKENS, 1, NEW_TOKENS, 1, NEW_TOKENS):
        dt, out = timed(n)
        warm.append(round(dt, 3))
        print(f"  [{name} {mode}] warm-up generate({n}): {dt:.2f}s", flush=True)
    res["warmup_s"] = time.time() - t
    res["warmup_calls_s"] = warm
    res["new_ids"] = out[0, PROMPT_LEN:].tolist()
    t64 = sorted(timed(NEW_TOKENS)[0] for _ in range(reps))
    t1 = sorted(timed(1)[0] for _ in range(reps))
    res["t64_s"], res["t1_s"] = t64, t1
    m64, m1 = t64[len(t64) // 2], t1[len(t1) // 2]
    res["decode_tok_s"] = (NEW_TOKENS - 1) / (m64 - m1)
    res["prefill_ms"] = m1 * 1e3
    res["gpu"] = torch.cuda.get_device_name()
    json.dump(res, open(out_path, "w"))
    print(f"  [{name} {mode}] t64 {m64 * 1e3:.1f} ms, t1 {m1 * 1e3:.2f} ms -> "
          f"{res['decode_tok_s']:.1f} tok/s, prefill {res['prefill_ms']:.2f} ms", flush=True)


def run_ref(name, mode, prompt_path, work, reps, timeout):
    out = os.path.join(work, f"ref_{mode}.json")
    cmd = [sys.executable, os.path.abspath(__file__), "--ref-worker", name, mode, prompt_path, out,
           "--reps", str(reps)]
    log(f"{name}: reference {mode} (timeout {timeout:.0f}s)")
    t = time.time()
    try:
        p = subprocess.run(cmd, timeout=timeout, stdout=sys.stdout, stderr=subprocess.PIPE, text=True)
    except subprocess.TimeoutExpired:
        return {"error": f"skipped: over {timeout:.0f}s (compile/warm-up) and cut off"}
    if p.returncode or not os.path.exists(out):
        return {"error": f"failed (rc {p.returncode}): " + p.stderr.strip()[-600:]}
    r = json.load(open(out))
    r["wall_s"] = time.time() - t
    log(f"{name}: reference {mode} done in {r['wall_s']:.1f}s (warm-up {r['warmup_s']:.1f}s)")
    return r


# ---------------------------------------------------------------------------------------------
# tgc side.

def export(name, work):
    import torch
    import make_decode_models as mdm  # tools/: the decoder-with-past wrapper and its export
    t = time.time()
    m = build(name)
    sz = mdm.sizes(m)
    w = mdm.DecoderWithPast(m, sz["num_layers"]).eval()
    path = os.path.join(work, "model.onnx")
    mdm.export(w, sz, path, dynamo=False)
    log(f"{name}: TorchScript export {time.time() - t:.1f}s, {os.path.getsize(path) / 1e6:.0f} MB, "
        f"attn {m.config._attn_implementation}, cache API {sorted(set(mdm.CACHE_API))}")
    vocab = sz["vocab"]
    del m, w
    torch.cuda.empty_cache() if torch.cuda.is_available() else None
    return path, vocab


def tgc_side(args, name, path, prompt, work):
    r = {}
    pkg = os.path.join(work, "pkg")
    cmd = [args.tgc, "compile", path, "-o", pkg, "--decode", "--max-seq", str(MAX_SEQ), "--target",
           args.target, "--precision", args.precision, "--no-cache"] + args.compile_flags
    t = time.time()
    c = subprocess.run(cmd, capture_output=True, text=True)
    r["compile_s"] = time.time() - t
    log(f"{name}: tgc compile {r['compile_s']:.1f}s: {c.stdout.strip()[-300:]}")
    if c.returncode:
        raise RuntimeError("tgc compile: " + (c.stderr + c.stdout)[-800:])
    runs = []
    for k in range(args.tgc_runs):
        js = os.path.join(work, f"gen{k}.json")
        g = subprocess.run([args.tgc, "generate", pkg, "--prompt-ids", ",".join(map(str, prompt)),
                            "--max-new-tokens", str(NEW_TOKENS), "--json", js],
                           capture_output=True, text=True)
        if g.returncode:
            raise RuntimeError("tgc generate: " + (g.stderr + g.stdout)[-800:])
        runs.append(json.load(open(js)))
        log(f"{name}: tgc generate run {k + 1}: prefill {runs[-1]['prefill_ms']:.2f} ms, decode "
            f"{runs[-1]['decode_tokens_per_s']:.1f} tok/s ({runs[-1]['decode_steps']} steps)")
    last = runs[-1]
    r.update(prefill_ms=last["prefill_ms"], decode_tok_s=last["decode_tokens_per_s"],
             new_ids=last["new_ids"], runs=[(x["prefill_ms"], x["decode_tokens_per_s"]) for x in runs])
    return r


def fmt(x, f="{:.1f}"):
    return "n/a" if x is None else f.format(x)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--ref-worker":
        reps = int(sys.argv[sys.argv.index("--reps") + 1]) if "--reps" in sys.argv else 5
        return ref_worker(*sys.argv[2:6], reps=reps)
    ap = argparse.ArgumentParser()
    ap.add_argument("--tgc", default=os.path.join(ROOT, "bazel-bin", "tools", "tgc"))
    ap.add_argument("--target", default="cuda:sm_90")
    ap.add_argument("--precision", default="fp16")
    ap.add_argument("--tgc-runs", type=int, default=2, help="tgc generate runs; the last reported")
    ap.add_argument("--reps", type=int, default=5, help="timed reference generate calls (median)")
    ap.add_argument("--budget-s", type=float, default=540, help="the whole run's time budget")
    ap.add_argument("--compile-cap-s", type=float, default=240,
                    help="most seconds one reduce-overhead cell (compile + warm-up + timing) may take")
    ap.add_argument("--compile-flags", default="", help="extra tgc compile flags (quoted)")
    ap.add_argument("--modes", default="eager,reduce-overhead")
    ap.add_argument("names", nargs="*", default=["gpt2", "llama_small"])
    args = ap.parse_args()
    args.compile_flags = shlex.split(args.compile_flags)
    out = os.environ.get("OUT", os.path.join(ROOT, "out", "decode_bench"))
    os.makedirs(out, exist_ok=True)
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import torch
    import transformers
    gpu = torch.cuda.get_device_name()
    log(f"torch {torch.__version__}, transformers {transformers.__version__}, {gpu}")
    deadline = T0 + args.budget_s
    modes = args.modes.split(",")
    tmp = tempfile.mkdtemp(prefix="decode_bench_")
    rows = {n: {"model": n} for n in args.names}

    # Phase 1: export, tgc, eager reference (bounded, cheap).
    for name in args.names:
        r = rows[name]
        work = os.path.join(tmp, name)
        os.makedirs(work, exist_ok=True)
        try:
            path, vocab = export(name, work)
            prompt = prompt_ids(vocab)
            r["prompt_path"] = os.path.join(work, "prompt.json")
            json.dump(prompt, open(r["prompt_path"], "w"))
            r["tgc"] = tgc_side(args, name, path, prompt, work)
        except Exception as e:  # keep going: one model's failure must not hide the others
            r["error"] = repr(e)[:600]
            log(f"{name}: FAILED {r['error']}")
            continue
        if "eager" in modes:
            r["eager"] = run_ref(name, "eager", r["prompt_path"], work, args.reps,
                                 max(30.0, min(180.0, deadline - time.time() - 30)))
    # Phase 2: reduce-overhead, the time left shared among the models still to do.
    if "reduce-overhead" in modes:
        todo = [n for n in args.names if "prompt_path" in rows[n]]
        for k, name in enumerate(todo):
            left = deadline - time.time() - 15
            cap = min(args.compile_cap_s, left / (len(todo) - k))
            if cap < 30:
                rows[name]["reduce-overhead"] = {"error": f"skipped: {left:.0f}s of the budget left"}
                continue
            rows[name]["reduce-overhead"] = run_ref(name, "reduce-overhead", rows[name]["prompt_path"],
                                                    os.path.join(tmp, name), args.reps, cap)

    lines = [f"GPU: {gpu}, tgc {args.precision}, reference fp16, batch 1, prompt {PROMPT_LEN} random ids, {NEW_TOKENS} new ids, "
             f"tgc --max-seq {MAX_SEQ}; torch {torch.__version__}, transformers "
             f"{transformers.__version__} ({time.strftime('%Y-%m-%d')})", "",
             "| model | tgc decode tok/s | eager tok/s | reduce-overhead tok/s | tgc / ro | "
             "tgc prefill ms (128) | eager prefill ms | ro prefill ms | tgc compile s | "
             "ids match (first 16) |", "|---|---|---|---|---|---|---|---|---|---|"]
    notes = []
    for name in args.names:
        r = rows[name]
        if "error" in r:
            lines.append(f"| {name} | error: {r['error'][:150]} |||||||||")
            continue
        t, e, ro = r["tgc"], r.get("eager", {}), r.get("reduce-overhead", {})
        for mode, x in (("eager", e), ("reduce-overhead", ro)):
            if "error" in x:
                notes.append(f"{name} {mode}: {x['error']}")
            elif x:
                notes.append(f"{name} {mode}: warm-up {x['warmup_s']:.1f}s "
                             f"(calls {x['warmup_calls_s']})")
        ref_ids = e.get("new_ids") or ro.get("new_ids")
        if ref_ids:
            a, b = t["new_ids"][:CHECK_IDS], ref_ids[:CHECK_IDS]
            same = sum(x == y for x, y in zip(a, b))
            prefix = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), len(b))
            match = f"{same}/{CHECK_IDS} (prefix {prefix})"
            r["ids_match"], r["ids_prefix"] = same, prefix
            if e.get("new_ids") and ro.get("new_ids"):
                notes.append(f"{name}: eager vs reduce-overhead first 16 ids equal: "
                             f"{sum(x == y for x, y in zip(e['new_ids'][:16], ro['new_ids'][:16]))}/16")
        else:
            match = "no reference"
        rod = ro.get("decode_tok_s")
        lines.append(
            f"| {name} | {t['decode_tok_s']:.1f} | {fmt(e.get('decode_tok_s'))} | {fmt(rod)} | "
            f"{fmt(t['decode_tok_s'] / rod if rod else None, '{:.2f}')} | {t['prefill_ms']:.2f} | "
            f"{fmt(e.get('prefill_ms'), '{:.2f}')} | {fmt(ro.get('prefill_ms'), '{:.2f}')} | "
            f"{t['compile_s']:.1f} | {match} |")
        notes.append(f"{name} tgc runs (prefill ms, decode tok/s): {t['runs']}")
    table = "\n".join(lines) + "\n\n" + "\n".join(f"- {n}" for n in notes) + "\n"
    print(table, flush=True)
    open(os.path.join(out, "decode_table.md"), "w").write(table)
    json.dump(rows, open(os.path.join(out, "decode_results.json"), "w"), indent=1, default=str)
    log("done")


if __name__ == "__main__":
    main()
