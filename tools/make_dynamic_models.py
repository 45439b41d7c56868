#!/usr/bin/env python3
"""make_dynamic_models.py — builds the bundled transformer test models with dynamic axes
(tests/data/models/{bert_tiny,gpt2_tiny,llama_tiny}_dyn) and reference outputs at many shapes.

Run where torch and transformers are installed (the GPU machine; the CPU is enough there):
    python3 tools/make_dynamic_models.py OUT_DIR [name ...]
then copy OUT_DIR/<name>_dyn into tests/data/models/. Each model is the same Hugging Face
architecture and config as ../shared/bench/make_testdata.py builds (random weights, fixed seed),
wrapped to return last_hidden_state, exported by the TorchScript exporter at opset 17 with
    dynamic_axes={'input_0': {0: 'batch', 1: 'seq'}, 'output_0': {0: 'batch', 1: 'seq'}}
so the graph keeps its shape arithmetic (Shape/Gather/Range/... computing positions and masks).
The trace uses a 2x16 example so no axis is specialised to 1.

Each folder gets model.onnx, shapes.json (each set's [batch, seq]) and test_data_set_K/ with
input_0.pb (int64 ids) and output_0.pb (torch's fp32 on the CPU), K = 0..7 for the shapes in
SHAPES. Where onnxruntime is installed it checks every set and prints the relative L2 errors.
These serve the shape-bucket tests (issue 28): one package compiled with
--input-shape 'input_0=1..8x1..128' must reproduce every set.
"""
import json
import os
import sys

import numpy as np
import torch
import torch.nn as nn

OPSET = 17
SEED = 28  # issue 28
VOCAB = 1000
# (batch, seq) of test_data_set_0..7; gpt2_tiny has n_positions=128, so seq <= 128.
SHAPES = [(1, 7), (3, 20), (4, 100), (8, 128), (1, 1), (2, 33), (5, 64), (8, 1)]
DYNAMIC = {"input_0": {0: "batch", 1: "seq"}, "output_0": {0: "batch", 1: "seq"}}


class Hidden(nn.Module):
    """Calls a HF model with keyword input and returns last_hidden_state (as anchors.py's)."""

    def __init__(self, m, key):
        super().__init__()
        self.m, self.key = m, key

    def forward(self, x):
        return self.m(**{self.key: x}).last_hidden_state


def build(name):
    import transformers as tf
    torch.manual_seed(SEED)
    if name == "bert_tiny":
        m = tf.BertModel(tf.BertConfig(hidden_size=128, num_hidden_layers=2, num_attention_heads=2,
                                       intermediate_size=512, vocab_size=VOCAB))
    elif name == "gpt2_tiny":
        m = tf.GPT2Model(tf.GPT2Config(n_embd=128, n_layer=2, n_head=2, vocab_size=VOCAB,
                                       n_positions=128))
    elif name == "llama_tiny":
        m = tf.LlamaModel(tf.LlamaConfig(hidden_size=128, intermediate_size=352, num_hidden_layers=2,
                                         num_attention_heads=4, num_key_value_heads=2,
                                         vocab_size=VOCAB))
    else:
        raise SystemExit(f"unknown model {name}")
    return Hidden(m, "input_ids").eval()


def ids(shape, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, VOCAB, shape, generator=g)


def rel_l2(a, b):
    return float(np.linalg.norm(a.astype(np.float64) - b) / max(np.linalg.norm(b), 1e-30))


def main():
    import onnx
    from onnx import numpy_helper
    out = sys.argv[1]
    names = sys.argv[2:] or ["bert_tiny", "gpt2_tiny", "llama_tiny"]
    for name in names:
        m = build(name)
        d = os.path.join(out, name + "_dyn")
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "model.onnx")
        with torch.no_grad():
            torch.onnx.export(m, (ids((2, 16), SEED),), path, opset_version=OPSET, dynamo=False,
                              input_names=["input_0"], output_names=["output_0"],
                              dynamic_axes=DYNAMIC)
        model = onnx.load(path)
        sets = []
        for k, (b, s) in enumerate(SHAPES):
            x = ids((b, s), 1000 + k)
            with torch.no_grad():
                y = m(x).float().numpy()
            sd = os.path.join(d, f"test_data_set_{k}")
            os.makedirs(sd, exist_ok=True)
            open(os.path.join(sd, "input_0.pb"), "wb").write(
                numpy_helper.from_array(x.numpy(), "input_0").SerializeToString())
            open(os.path.join(sd, "output_0.pb"), "wb").write(
                numpy_helper.from_array(y, "output_0").SerializeToString())
            sets.append((x.numpy(), y))
        with open(os.path.join(d, "shapes.json"), "w") as f:
            json.dump({"input": "input_0", "dims": ["batch", "seq"], "seed": SEED,
                       "sets": {f"test_data_set_{k}": list(s) for k, s in enumerate(SHAPES)}},
                      f, indent=1)
            f.write("\n")
        ops = {}
        for n in model.graph.node:
            ops[n.op_type] = ops.get(n.op_type, 0) + 1
        dims = [[dd.dim_param or dd.dim_value for dd in v.type.tensor_type.shape.dim]
                for v in list(model.graph.input) + list(model.graph.output)]
        print(f"{name}_dyn: {os.path.getsize(path) / 1e6:.2f} MB, {len(model.graph.node)} nodes, "
              f"io dims {dims}")
        print("  ops: " + " ".join(f"{k}x{v}" for k, v in sorted(ops.items())))
        try:
            import onnxruntime as ort
            sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
            errs = [rel_l2(sess.run(None, {"input_0": x})[0], y) for x, y in sets]
            print("  onnxruntime vs torch rel_l2: " +
                  " ".join(f"{b}x{s}:{e:.1e}" for (b, s), e in zip(SHAPES, errs)))
        except ImportError:
            pass
        sys.stdout.flush()


if __name__ == "__main__":
    main()
