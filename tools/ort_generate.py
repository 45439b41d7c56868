#!/usr/bin/env python3
"""ort_generate.py — greedy text generation with ONNX Runtime over a "decoder with past" export
(tests/data/models/*_decode, made by tools/make_decode_models.py; issue 29).

    python3 tools/ort_generate.py MODEL_DIR --prompt-ids 1,2,3 --max-new-tokens 8
    python3 tools/ort_generate.py --check [MODEL_DIR ...]   # every *_decode folder by default

The model folder holds model.onnx and decode.json (input/output names and their roles, kv_heads,
head_dim, ...). The loop is what `tgc generate` does, with a growing cache instead of a static one:
a prefill of the whole prompt with empty pasts ([batch, kv_heads, 0, head_dim]), then one token at
a time, each step's `present.*` fed back as the next step's `past_key_values.*`, attention_mask all
ones over past + new tokens, position_ids = past_seq .. past_seq + seq - 1, next id = argmax of the
last position's logits (ties: the lowest id, as torch.argmax).

--check: for each folder, both test sets through ONNX Runtime (relative L2 per output, worst
printed; must be < 1e-5) and the greedy loop against generate_ref.json's new_ids (must be equal);
prints a table, exit 1 on any miss.

As a library: `generate(model_dir, prompt_ids, max_new_tokens)` -> (new_ids, top2_gaps), and
`Decoder(model_dir)` whose `.step(ids, past)` runs one forward.
"""
import argparse
import glob
import json
import os
import sys

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


class Decoder:
    """One ONNX Runtime session over a decode export, driven by its decode.json."""

    def __init__(self, model_dir, providers=None, model_file="model.onnx"):
        import onnxruntime as ort
        self.dir = model_dir
        self.meta = json.load(open(os.path.join(model_dir, "decode.json")))
        so = ort.SessionOptions()
        so.log_severity_level = 3
        self.sess = ort.InferenceSession(os.path.join(model_dir, model_file), so,
                                         providers=providers or ["CPUExecutionProvider"])
        self.inputs = self.meta["inputs"]
        self.outputs = self.meta["outputs"]
        self.L = self.meta["num_layers"]
        self.kv, self.hd = self.meta["kv_heads"], self.meta["head_dim"]
        self.dtype = np.float16 if self.meta.get("dtype") == "float16" else np.float32

    def empty_past(self, batch=1):
        z = np.zeros((batch, self.kv, 0, self.hd), self.dtype)
        return [(z, z) for _ in range(self.L)]

    def feeds(self, ids, past):
        """ids: int64 [batch, seq]; past: [(key, value)] per layer, [batch, kv, past_seq, hd]."""
        ids = np.asarray(ids, np.int64)
        b, s = ids.shape
        p = past[0][0].shape[2]
        f = {}
        for i in self.inputs:
            r = i["role"]
            if r == "input_ids":
                f[i["name"]] = ids
            elif r == "attention_mask":
                f[i["name"]] = np.ones((b, p + s), np.int64)
            elif r == "position_ids":
                f[i["name"]] = np.broadcast_to(np.arange(p, p + s, dtype=np.int64), (b, s)).copy()
            elif r == "past_key":
                f[i["name"]] = past[i["layer"]][0]
            elif r == "past_value":
                f[i["name"]] = past[i["layer"]][1]
            else:
                raise ValueError(f"unknown input role {r}")
        return f

    def step(self, ids, past):
        """One forward: returns (logits [batch, seq, vocab], presents [(key, value)] per layer)."""
        outs = dict(zip([o.name for o in self.sess.get_outputs()],
                        self.sess.run(None, self.feeds(ids, past))))
        pres = [[None, None] for _ in range(self.L)]
        logits = None
        for o in self.outputs:
            if o["role"] == "logits":
                logits = outs[o["name"]]
            elif o["role"] == "present_key":
                pres[o["layer"]][0] = outs[o["name"]]
            elif o["role"] == "present_value":
                pres[o["layer"]][1] = outs[o["name"]]
        return logits, [tuple(kv) for kv in pres]


def top2_gap(row):
    t = np.sort(row.astype(np.float64))
    return float(t[-1] - t[-2])


def generate(model_dir, prompt_ids, max_new_tokens, decoder=None):
    """Greedy: prefill the prompt, then one token at a time. Returns (new_ids, top-2 logit gaps)."""
    d = decoder or Decoder(model_dir)
    past = d.empty_past(1)
    ids = np.asarray([prompt_ids], np.int64)
    new, gaps = [], []
    for _ in range(max_new_tokens):
        logits, past = d.step(ids, past)
        last = logits[0, -1]
        nxt = int(np.argmax(last))
        new.append(nxt)
        gaps.append(top2_gap(last))
        ids = np.asarray([[nxt]], np.int64)
    return new, gaps


def rel_l2(a, b):
    a = a.astype(np.float64)
    b = b.astype(np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def load_set(sdir):
    from onnx import numpy_helper, TensorProto

    def read(p):
        t = TensorProto()
        t.ParseFromString(open(p, "rb").read())
        return t.name, numpy_helper.to_array(t)
    ins = [read(p) for p in sorted(glob.glob(os.path.join(sdir, "input_*.pb")),
                                   key=lambda p: int(p.rsplit("_", 1)[1][:-3]))]
    outs = [read(p) for p in sorted(glob.glob(os.path.join(sdir, "output_*.pb")),
                                    key=lambda p: int(p.rsplit("_", 1)[1][:-3]))]
    return ins, outs


def check(model_dir):
    """Returns a row: name, worst rel-L2 of set 0 and 1, greedy match, min top-2 gap."""
    d = Decoder(model_dir)
    row = {"model": os.path.basename(os.path.normpath(model_dir))}
    gin = [i.name for i in d.sess.get_inputs()]
    gout = [o.name for o in d.sess.get_outputs()]
    ok = True
    for k in (0, 1):
        ins, outs = load_set(os.path.join(model_dir, f"test_data_set_{k}"))
        assert [n for n, _ in ins] == gin, (model_dir, k, [n for n, _ in ins], gin)
        assert [n for n, _ in outs] == gout, (model_dir, k)
        got = d.sess.run(None, dict(ins))
        e = max(rel_l2(g, y) for g, (_, y) in zip(got, outs))
        row[f"set{k}_rel_l2"] = e
        ok &= e < 1e-5
    ref = json.load(open(os.path.join(model_dir, "generate_ref.json")))
    new, gaps = generate(model_dir, ref["prompt_ids"], ref["max_new_tokens"], d)
    row["greedy"] = "%d/%d" % (sum(a == b for a, b in zip(new, ref["new_ids"])), len(ref["new_ids"]))
    row["greedy_equal"] = new == ref["new_ids"]
    row["min_gap"] = min(gaps)
    ok &= row["greedy_equal"]
    p16 = os.path.join(model_dir, "generate_ref_fp16.json")
    if os.path.exists(p16):
        r16 = json.load(open(p16))["new_ids"]
        n = 0
        while n < len(r16) and r16[n] == ref["new_ids"][n]:
            n += 1
        row["fp16_prefix"] = "%d/%d" % (n, len(r16))
    row["ok"] = ok
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dirs", nargs="*")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--prompt-ids", default=None)
    ap.add_argument("--max-new-tokens", type=int, default=32)
    a = ap.parse_args()
    if a.check:
        dirs = a.dirs or sorted(p for p in glob.glob(os.path.join(ROOT, "tests/data/models/*"))
                                if os.path.exists(os.path.join(p, "decode.json")))
        rows = [check(p) for p in dirs]
        print("| model | set 0 rel-L2 | set 1 rel-L2 | ORT greedy = generate_ref | min top-2 gap "
              "| fp16 ref: equal prefix |")
        print("|---|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['model']} | {r['set0_rel_l2']:.1e} | {r['set1_rel_l2']:.1e} | {r['greedy']} "
                  f"| {r['min_gap']:.2e} | {r.get('fp16_prefix', '-')} |")
        bad = [r["model"] for r in rows if not r["ok"]]
        print("all ok" if not bad else "FAILED: " + " ".join(bad))
        return 1 if bad else 0
    if len(a.dirs) != 1 or a.prompt_ids is None:
        ap.error("MODEL_DIR and --prompt-ids, or --check")
    new, _ = generate(a.dirs[0], [int(x) for x in a.prompt_ids.split(",")], a.max_new_tokens)
    print(",".join(map(str, new)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
