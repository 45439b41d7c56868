#!/usr/bin/env python3
"""make_decode_models.py — builds the KV-cache decode test models (issue 29):
tests/data/models/{gpt2_tiny,llama_tiny,qwen2_tiny}_decode (and *_decode_dynamo where the dynamo
exporter manages), with reference generations.

Run where torch and transformers are installed (the GPU machine; the CPU is enough there, the GPU
gives the fp16 reference):
    python3 tools/make_decode_models.py OUT_DIR [name ...]
then copy OUT_DIR/<name>_decode* into tests/data/models/.

Each model is a Hugging Face causal LM (GPT2LMHeadModel / LlamaForCausalLM / Qwen2ForCausalLM;
configs as ../shared/bench/make_testdata.py's, random weights, seed 29) exported in the "decoder
with past" form Optimum gives users, by the TorchScript exporter at opset 17:
  inputs  input_ids [batch, seq] int64, attention_mask [batch, total_seq] int64 (total = past + seq),
          position_ids [batch, seq] int64,
          past_key_values.{i}.key / .value [batch, kv_heads, past_seq, head_dim] float32, i per layer
  outputs logits [batch, seq, vocab], present.{i}.key / .value [batch, kv_heads, total_seq, head_dim]
A wrapper takes the flat tensors, builds the transformers cache object (whichever API the installed
version has: DynamicCache.from_legacy_cache, DynamicCache(pairs), or DynamicCache().update), calls
the model and returns logits and the updated cache flat. Traced at batch 2, seq 3, past 5 so no
axis is specialised to 0 or 1.

Per folder: model.onnx, decode.json (names, roles, sizes), generate_ref.json (transformers' own
greedy model.generate, fp32 CPU, 8 prompt ids -> 32 new ids, eos off), generate_ref_fp16.json (the
same prompt, the model in fp16 on the GPU), test_data_set_0 (prefill: 8 prompt tokens, empty past)
and test_data_set_1 (one decode step: past = set 0's presents, the greedy next token), outputs
torch's fp32 on the CPU. The prompt is chosen among seeded ones: every one of its 32 greedy steps
has a top-2 logit gap >= MIN_GAP (fp32 rounding cannot flip a token), and its new ids are the most
varied found (16+ distinct stops the search). Where onnxruntime is installed each
export is checked (tools/ort_generate.py --check); a default-attention (sdpa) export that fails it
is redone with attn_implementation="eager".
"""
import json
import os
import shutil
import sys
import time
import traceback

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

OPSET = 17
SEED = 29  # issue 29
VOCAB = 1000
PROMPT_LEN, NEW_TOKENS = 8, 32
MIN_GAP = 2e-3
CACHE_API = []


def config(name, attn):
    import transformers as tf
    kw = {} if attn is None else {"attn_implementation": attn}
    if name == "gpt2_tiny":
        return tf.GPT2LMHeadModel, tf.GPT2Config(n_embd=128, n_layer=2, n_head=2, vocab_size=VOCAB,
                                                 n_positions=128, **kw)
    if name == "llama_tiny":
        return tf.LlamaForCausalLM, tf.LlamaConfig(hidden_size=128, intermediate_size=352,
                                                   num_hidden_layers=2, num_attention_heads=4,
                                                   num_key_value_heads=2, vocab_size=VOCAB, **kw)
    if name == "qwen2_tiny":
        return tf.Qwen2ForCausalLM, tf.Qwen2Config(hidden_size=128, intermediate_size=352,
                                                   num_hidden_layers=2, num_attention_heads=4,
                                                   num_key_value_heads=2, vocab_size=VOCAB, **kw)
    raise SystemExit(f"unknown model {name}")


def build(name, attn=None):
    cls, cfg = config(name, attn)
    torch.manual_seed(SEED)
    m = cls(cfg).eval()
    for c in (m.config, m.generation_config):
        c.eos_token_id = None
        c.pad_token_id = None
        c.bos_token_id = None
    return m


def sizes(m):
    c = m.config
    if hasattr(c, "n_embd"):
        return dict(num_layers=c.n_layer, num_heads=c.n_head, kv_heads=c.n_head,
                    head_dim=c.n_embd // c.n_head, vocab=c.vocab_size, max_positions=c.n_positions,
                    hidden=c.n_embd)
    return dict(num_layers=c.num_hidden_layers, num_heads=c.num_attention_heads,
                kv_heads=c.num_key_value_heads,
                head_dim=getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads,
                vocab=c.vocab_size, max_positions=c.max_position_embeddings, hidden=c.hidden_size)


def make_cache(pairs):
    from transformers import DynamicCache
    if hasattr(DynamicCache, "from_legacy_cache"):
        try:
            c = DynamicCache.from_legacy_cache(tuple(pairs))
            CACHE_API.append("DynamicCache.from_legacy_cache")
            return c
        except Exception:
            pass
    try:
        c = DynamicCache(pairs)
        CACHE_API.append("DynamicCache(list of (key, value))")
        return c
    except Exception:
        pass
    c = DynamicCache()
    for i, (k, v) in enumerate(pairs):
        c.update(k, v, i)
    CACHE_API.append("DynamicCache().update(key, value, layer)")
    return c


def cache_pairs(c):
    if hasattr(c, "layers"):
        return [(l.keys, l.values) for l in c.layers]
    if hasattr(c, "key_cache"):
        return list(zip(c.key_cache, c.value_cache))
    if hasattr(c, "to_legacy_cache"):
        return list(c.to_legacy_cache())
    return list(c)


class DecoderWithPast(nn.Module):
    """Flat tensors in and out: (input_ids, attention_mask, position_ids, k0, v0, k1, v1, ...)."""

    def __init__(self, m, num_layers):
        super().__init__()
        self.m, self.L = m, num_layers

    def forward(self, input_ids, attention_mask, position_ids, *past):
        cache = make_cache([(past[2 * i], past[2 * i + 1]) for i in range(self.L)])
        out = self.m(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                     past_key_values=cache, use_cache=True, return_dict=True)
        flat = [out.logits]
        for k, v in cache_pairs(out.past_key_values):
            flat += [k, v]
        return tuple(flat)


def names(L):
    ins = ["input_ids", "attention_mask", "position_ids"]
    outs = ["logits"]
    for i in range(L):
        ins += [f"past_key_values.{i}.key", f"past_key_values.{i}.value"]
        outs += [f"present.{i}.key", f"present.{i}.value"]
    return ins, outs


def dynamic_axes(L):
    d = {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "total_seq"},
         "position_ids": {0: "batch", 1: "seq"}, "logits": {0: "batch", 1: "seq"}}
    for i in range(L):
        for kv in ("key", "value"):
            d[f"past_key_values.{i}.{kv}"] = {0: "batch", 2: "past_seq"}
            d[f"present.{i}.{kv}"] = {0: "batch", 2: "total_seq"}
    return d


def example(sz, batch, seq, past, g, ids=None):
    if ids is None:
        ids = torch.randint(0, VOCAB, (batch, seq), generator=g)
    mask = torch.ones(batch, past + seq, dtype=torch.int64)
    pos = torch.arange(past, past + seq, dtype=torch.int64).expand(batch, seq).contiguous()
    pv = []
    for _ in range(sz["num_layers"]):
        for _ in range(2):
            pv.append(torch.randn(batch, sz["kv_heads"], past, sz["head_dim"], generator=g))
    return (ids, mask, pos, *pv)


def pick_prompt(m, tries=24):
    """Among seeded prompts whose greedy run has every top-2 gap >= MIN_GAP, the one whose 32 new
    ids are most varied (a random-weight model, GPT-2's tied embeddings above all, tends to repeat
    a token forever, which a broken cache would reproduce too). Returns (prompt, new, gap, try)."""
    best, best_key = None, None
    for t in range(tries):
        g = torch.Generator().manual_seed(SEED * 100 + t)
        prompt = torch.randint(0, VOCAB, (1, PROMPT_LEN), generator=g)
        with torch.no_grad():
            r = m.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=NEW_TOKENS,
                           min_new_tokens=NEW_TOKENS, do_sample=False, num_beams=1,
                           return_dict_in_generate=True, output_logits=True)
        new = r.sequences[0, PROMPT_LEN:].tolist()
        gaps = [float(torch.topk(l[0].double(), 2).values.diff().abs()) for l in r.logits]
        assert len(new) == NEW_TOKENS, new
        key = (min(gaps) >= MIN_GAP, len(set(new)), min(gaps))
        if best_key is None or key > best_key:
            best, best_key = (prompt, new, min(gaps), t), key
        if key[0] and key[1] >= 16:
            break
    print(f"  prompt try {best[3]}: {len(set(best[1]))} distinct of {NEW_TOKENS} new ids")
    return best


def write_pb(path, arr, name):
    from onnx import numpy_helper
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(np.ascontiguousarray(arr), name).SerializeToString())


def write_sets(d, w, sz, prompt, new0):
    ins_n, outs_n = names(sz["num_layers"])
    empty = example(sz, 1, PROMPT_LEN, 0, torch.Generator().manual_seed(0), ids=prompt)
    with torch.no_grad():
        o0 = w(*empty)
    nxt = int(o0[0][0, -1].argmax())
    assert nxt == new0, (nxt, new0)
    step = (torch.tensor([[nxt]]), torch.ones(1, PROMPT_LEN + 1, dtype=torch.int64),
            torch.tensor([[PROMPT_LEN]]), *o0[1:])
    with torch.no_grad():
        o1 = w(*step)
    for k, (ins, outs) in enumerate([(empty, o0), (step, o1)]):
        sd = os.path.join(d, f"test_data_set_{k}")
        os.makedirs(sd, exist_ok=True)
        for j, (x, n) in enumerate(zip(ins, ins_n)):
            write_pb(os.path.join(sd, f"input_{j}.pb"), x.numpy(), n)
        for j, (y, n) in enumerate(zip(outs, outs_n)):
            write_pb(os.path.join(sd, f"output_{j}.pb"), y.float().numpy(), n)


def export(w, sz, path, dynamo):
    ins_n, outs_n = names(sz["num_layers"])
    ex = example(sz, 2, 3, 5, torch.Generator().manual_seed(SEED))
    with torch.no_grad():
        if dynamo:
            # dynamic_shapes follow forward's signature (three tensors, then the *past tuple).
            # Named dims where the program allows them; total_seq (the attention mask's length)
            # is Dim.DYNAMIC: the mask code guards on total <= past + seq, which a named Dim refuses.
            D = torch.export.Dim
            b, s, p, A = D("batch"), D("seq"), D("past_seq"), D.DYNAMIC
            L2 = 2 * sz["num_layers"]
            named = ({0: b, 1: s}, {0: b, 1: A}, {0: b, 1: s}, tuple({0: b, 2: p} for _ in range(L2)))
            auto = ({0: D.AUTO, 1: D.AUTO},) * 3 + (tuple({0: D.AUTO, 2: D.AUTO} for _ in range(L2)),)
            tries = [("named Dims (batch, seq, past_seq; total_seq DYNAMIC)", named),
                     ("Dim.AUTO everywhere", auto)]
            for k, (what, ds) in enumerate(tries):
                try:
                    torch.onnx.export(w, ex, path, dynamo=True, external_data=False, input_names=ins_n,
                                      output_names=outs_n, dynamic_shapes=ds)
                    print(f"  dynamo export with {what}")
                    return what
                except Exception as e:
                    print(f"  dynamo export with {what} failed: {repr(e)[:600]}")
                    if k == len(tries) - 1:
                        raise
        else:
            torch.onnx.export(w, ex, path, opset_version=OPSET, dynamo=False, input_names=ins_n,
                              output_names=outs_n, dynamic_axes=dynamic_axes(sz["num_layers"]))


def describe(path):
    import onnx
    mo = onnx.load(path)
    g = mo.graph
    ops = {}
    for n in g.node:
        ops[n.op_type] = ops.get(n.op_type, 0) + 1
    dims = lambda v: [dd.dim_param or dd.dim_value for dd in v.type.tensor_type.shape.dim]
    print(f"  {os.path.getsize(path) / 1e6:.2f} MB, {len(g.node)} nodes, opset "
          f"{[o.version for o in mo.opset_import if o.domain in ('', 'ai.onnx')]}")
    print("  inputs: " + ", ".join(f"{v.name}{dims(v)}" for v in g.input))
    print("  outputs: " + ", ".join(f"{v.name}{dims(v)}" for v in g.output))
    print("  ops: " + " ".join(f"{k}x{v}" for k, v in sorted(ops.items())))


def meta(name, sz, exporter, prompt_info, attn):
    import transformers
    ins_n, outs_n = names(sz["num_layers"])
    ins = [{"name": "input_ids", "role": "input_ids", "dtype": "int64", "shape": ["batch", "seq"]},
           {"name": "attention_mask", "role": "attention_mask", "dtype": "int64",
            "shape": ["batch", "total_seq"], "note": "ones over past + new tokens; total_seq = past_seq + seq"},
           {"name": "position_ids", "role": "position_ids", "dtype": "int64", "shape": ["batch", "seq"],
            "note": "past_seq .. past_seq + seq - 1"}]
    outs = [{"name": "logits", "role": "logits", "dtype": "float32", "shape": ["batch", "seq", "vocab"]}]
    for i in range(sz["num_layers"]):
        for kv in ("key", "value"):
            ins.append({"name": f"past_key_values.{i}.{kv}", "role": f"past_{kv}", "layer": i,
                        "dtype": "float32", "shape": ["batch", sz["kv_heads"], "past_seq", sz["head_dim"]]})
            outs.append({"name": f"present.{i}.{kv}", "role": f"present_{kv}", "layer": i,
                         "past_input": f"past_key_values.{i}.{kv}", "dtype": "float32",
                         "shape": ["batch", sz["kv_heads"], "total_seq", sz["head_dim"]]})
    assert [i["name"] for i in ins] == ins_n and [o["name"] for o in outs] == outs_n
    return {"model": name, "inputs": ins, "outputs": outs, **sz, "dtype": "float32",
            "eos_token_id": None, "exporter": exporter, "attn_implementation": attn or "default",
            "seed": SEED, "prompt_seed_try": prompt_info, "torch": torch.__version__,
            "transformers": transformers.__version__,
            "present_is": "concat(past, new) along axis 2 (dynamic cache): total_seq = past_seq + seq"}


def fp16_ref(m, prompt):
    if not torch.cuda.is_available():
        return None
    import copy
    mh = copy.deepcopy(m).to("cuda", torch.float16)
    with torch.no_grad():
        r = mh.generate(prompt.cuda(), attention_mask=torch.ones_like(prompt).cuda(),
                        max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS, do_sample=False,
                        num_beams=1)
    return r[0, PROMPT_LEN:].tolist()


def ort_check(d):
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return None
    import ort_generate
    r = ort_generate.check(d)
    print(f"  onnxruntime: set0 {r['set0_rel_l2']:.1e} set1 {r['set1_rel_l2']:.1e} greedy {r['greedy']} "
          f"min gap {r['min_gap']:.1e} -> {'ok' if r['ok'] else 'FAILED'}")
    return r["ok"]


def make(name, out, do_dynamo, t_start, budget_s):
    import transformers
    attn = None
    for attempt in range(2):
        m = build(name, attn)
        sz = sizes(m)
        prompt, new, gap, t = pick_prompt(m)
        w = DecoderWithPast(m, sz["num_layers"]).eval()
        d = os.path.join(out, name + "_decode")
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        CACHE_API.clear()
        t0 = time.time()
        export(w, sz, os.path.join(d, "model.onnx"), dynamo=False)
        print(f"{name}_decode: TorchScript export {time.time() - t0:.1f}s, attn "
              f"{m.config._attn_implementation}, cache API {sorted(set(CACHE_API))}, "
              f"transformers {transformers.__version__}, torch {torch.__version__}")
        describe(os.path.join(d, "model.onnx"))
        write_sets(d, w, sz, prompt, new[0])
        with open(os.path.join(d, "generate_ref.json"), "w") as f:
            json.dump({"prompt_ids": prompt[0].tolist(), "new_ids": new, "max_new_tokens": NEW_TOKENS,
                       "min_top2_gap": gap, "source": "transformers generate, greedy, fp32 CPU"}, f)
            f.write("\n")
        with open(os.path.join(d, "decode.json"), "w") as f:
            json.dump(meta(name, sz, "torchscript opset 17", t, attn), f, indent=1)
            f.write("\n")
        h = fp16_ref(m, prompt)
        if h is not None:
            same = next((i for i, (a, b) in enumerate(zip(h, new)) if a != b), len(h))
            with open(os.path.join(d, "generate_ref_fp16.json"), "w") as f:
                json.dump({"prompt_ids": prompt[0].tolist(), "new_ids": h, "max_new_tokens": NEW_TOKENS,
                           "equal_prefix_with_fp32": same,
                           "source": f"transformers generate, greedy, fp16 on {torch.cuda.get_device_name()}"},
                          f)
                f.write("\n")
            print(f"  fp16 generate on GPU: first {same} of {NEW_TOKENS} ids equal fp32's")
        print(f"  prompt try {t}: {prompt[0].tolist()} -> {new} (min top-2 gap {gap:.2e})")
        ok = ort_check(d)
        if ok is False and attn is None:
            print(f"  default attention export fails the ORT check: redoing with eager attention")
            attn = "eager"
            continue
        break
    if not do_dynamo:
        return
    if time.time() - t_start > budget_s:
        print(f"{name}_decode_dynamo: skipped (time budget)")
        return
    dd = os.path.join(out, name + "_decode_dynamo")
    shutil.rmtree(dd, ignore_errors=True)
    os.makedirs(dd)
    try:
        t0 = time.time()
        how = export(w, sz, os.path.join(dd, "model.onnx"), dynamo=True)
        print(f"{name}_decode_dynamo: dynamo export {time.time() - t0:.1f}s")
        describe(os.path.join(dd, "model.onnx"))
        for f in os.listdir(d):
            if f != "model.onnx" and f != "decode.json":
                src = os.path.join(d, f)
                (shutil.copytree if os.path.isdir(src) else shutil.copy)(src, os.path.join(dd, f))
        with open(os.path.join(dd, "decode.json"), "w") as f:
            json.dump(meta(name, sz, f"dynamo (torch.onnx.export dynamo=True, {how})", t, attn), f,
                      indent=1)
            f.write("\n")
        if ort_check(dd) is False:
            print(f"{name}_decode_dynamo: fails the ORT check: dropped")
            shutil.rmtree(dd)
    except Exception as e:
        traceback.print_exc(limit=3)
        print(f"{name}_decode_dynamo: FAILED {repr(e)[:300]}")
        shutil.rmtree(dd, ignore_errors=True)


def main():
    out = sys.argv[1]
    args = sys.argv[2:]
    do_dynamo = "--no-dynamo" not in args
    names_ = [a for a in args if not a.startswith("--")] or ["gpt2_tiny", "llama_tiny", "qwen2_tiny"]
    t_start = time.time()
    for n in names_:
        try:
            make(n, out, do_dynamo, t_start, budget_s=float(os.environ.get("DYNAMO_BUDGET_S", "180")))
        except Exception as e:
            traceback.print_exc()
            print(f"{n}: FAILED {repr(e)[:300]}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
