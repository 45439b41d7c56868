#!/usr/bin/env python3
"""run_ops_vs_ort.py — op variants the ONNX node tests leave out, checked against ONNX Runtime.

The node tests cover each op's common form; many attributes and input combinations (a
bidirectional LSTM with per-batch sequence lengths, a reverse GRU with linear_before_reset, custom
activation functions, ...) appear in none of them. Each case here is a small one-node model with
random weights: ONNX Runtime (pinned by tools/setup) computes the reference outputs, which are
written as an ONNX test_data_set; `tgc compile` + `tgc run --test-data` must match them (rel-L2
< 1e-5 in fp32). Refusal cases: attribute and shape errors a compile must refuse with exit 1 and
an error naming the node.

    run_ops_vs_ort.py [--target cpu|cuda:sm_90] [--filter SUBSTR] [--write-cases DIR]
    run_ops_vs_ort.py --cases DIR --target cuda:sm_90     # reuse written cases (no onnxruntime)

Last line: `ops vs ort: N passed, N failed`.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from ops_vs_ort_conv import convolutions
from ops_vs_ort_convtranspose import conv_transposes
from ops_vs_ort_gemv import gemvs
from ops_vs_ort_reduce import large_reductions

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OPSET = 14


def recurrent(op, hidden, inp, batch, steps, direction="forward", seq_lens=None, init=True,
              bias=True, peep=False, layout=0, seed=0, **attrs):
    """A one-node RNN/GRU/LSTM model and its inputs. seq_lens: a list (a graph input) or None."""
    rng = np.random.default_rng(seed)
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[op]
    d = 2 if direction == "bidirectional" else 1
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32) * 0.5
    x_shape = [batch, steps, inp] if layout else [steps, batch, inp]
    st_shape = [batch, d, hidden] if layout else [d, batch, hidden]
    inits = [numpy_helper.from_array(f32(d, gates * hidden, inp), "W"),
             numpy_helper.from_array(f32(d, gates * hidden, hidden), "R")]
    names = ["X", "W", "R"]
    feeds = {"X": f32(*x_shape)}
    graph_inputs = [helper.make_tensor_value_info("X", TensorProto.FLOAT, x_shape)]
    if bias:
        inits.append(numpy_helper.from_array(f32(d, 2 * gates * hidden), "B"))
    names.append("B" if bias else "")
    if seq_lens is not None:
        feeds["L"] = np.array(seq_lens, dtype=np.int32)
        graph_inputs.append(helper.make_tensor_value_info("L", TensorProto.INT32, [batch]))
    names.append("L" if seq_lens is not None else "")
    for s in (["H0", "C0"] if op == "LSTM" else ["H0"]):
        if init:
            feeds[s] = f32(*st_shape)
            graph_inputs.append(helper.make_tensor_value_info(s, TensorProto.FLOAT, st_shape))
        names.append(s if init else "")
    if op == "LSTM" and peep:
        inits.append(numpy_helper.from_array(f32(d, 3 * hidden), "P"))
        names.append("P")
    while names and names[-1] == "":
        names.pop()
    outs = ["Y", "Y_h", "Y_c"] if op == "LSTM" else ["Y", "Y_h"]
    node = helper.make_node(op, names, outs, hidden_size=hidden, direction=direction, **attrs)
    if layout:
        node.attribute.append(helper.make_attribute("layout", layout))
    graph = helper.make_graph([node], f"{op.lower()}_case", graph_inputs,
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, None)
                               for o in outs], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    return model, feeds


def control_flow():
    """If on a condition computed from shapes, Loop with carried values and scan outputs, Scan
    over axis 1 in reverse: resolved at compile time (the condition folds; loops unroll)."""
    rng = np.random.default_rng(20)
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)
    T = TensorProto
    vi = helper.make_tensor_value_info
    c = {}
    # If: the branch taken when x's first dim exceeds 2, reading an outer-scope value.
    then_g = helper.make_graph([helper.make_node("Mul", ["x", "x"], ["t"])], "then", [],
                               [vi("t", T.FLOAT, None)])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [],
                               [vi("e", T.FLOAT, None)])
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "zero"], ["d0"], axis=0),
             helper.make_node("Greater", ["d0", "two"], ["cond"]),
             helper.make_node("If", ["cond"], ["y"], then_branch=then_g, else_branch=else_g)]
    for rows, name in ((3, "if_shape_condition_then"), (2, "if_shape_condition_else")):
        g = helper.make_graph(nodes, "if_case", [vi("x", T.FLOAT, [rows, 4])],
                              [vi("y", T.FLOAT, None)],
                              [numpy_helper.from_array(np.array(0, np.int64), "zero"),
                               numpy_helper.from_array(np.array(2, np.int64), "two")])
        c[name] = (helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)]),
                   {"x": f32(rows, 4)})
    # If on a condition known only at run time (a graph input): both branches run, a select
    # picks each output.
    g = helper.make_graph(
        [helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)], "if_rt",
        [vi("x", T.FLOAT, [3, 4]), vi("c", T.BOOL, [])], [vi("y", T.FLOAT, None)])
    for flag in (True, False):
        c[f"if_runtime_condition_{str(flag).lower()}"] = (
            helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)]),
            {"x": f32(3, 4), "c": np.array(flag)})
    # Loop: 4 iterations of acc = acc * w + i, each acc also a scan output.
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Cast", ["i"], ["fi"], to=T.FLOAT),
         helper.make_node("Mul", ["acc", "w"], ["m"]),
         helper.make_node("Add", ["m", "fi"], ["acc_out"]),
         helper.make_node("Identity", ["acc_out"], ["scan_out"])], "body",
        [vi("i", T.INT64, []), vi("cond_in", T.BOOL, []), vi("acc", T.FLOAT, [3])],
        [vi("cond_out", T.BOOL, []), vi("acc_out", T.FLOAT, [3]), vi("scan_out", T.FLOAT, [3])])
    g = helper.make_graph(
        [helper.make_node("Loop", ["M", "", "a0"], ["a", "scans"], body=body)], "loop_case",
        [vi("a0", T.FLOAT, [3]), vi("w", T.FLOAT, [3])],
        [vi("a", T.FLOAT, None), vi("scans", T.FLOAT, None)],
        [numpy_helper.from_array(np.array(4, np.int64), "M")])
    c["loop_carried_and_scan"] = (helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)]),
                                  {"a0": f32(3), "w": f32(3)})
    # Loop with a known trip count and a condition known only at run time (the initial one a
    # graph input, the body's computed from the carried value): predicated iterations.
    body = helper.make_graph(
        [helper.make_node("Mul", ["acc", "w"], ["m"]),
         helper.make_node("Add", ["m", "one"], ["acc_out"]),
         helper.make_node("ReduceSum", ["acc_out"], ["tot"], keepdims=0),
         helper.make_node("Less", ["tot", "limit"], ["cond_out"])], "body",
        [vi("i", T.INT64, []), vi("cond_in", T.BOOL, []), vi("acc", T.FLOAT, [3])],
        [vi("cond_out", T.BOOL, []), vi("acc_out", T.FLOAT, [3])],
        [numpy_helper.from_array(np.ones(3, np.float32), "one"),
         numpy_helper.from_array(np.array(12.0, np.float32), "limit")])
    g = helper.make_graph(
        [helper.make_node("Loop", ["M", "go", "a0"], ["a"], body=body)], "loop_rt",
        [vi("a0", T.FLOAT, [3]), vi("w", T.FLOAT, [3]), vi("go", T.BOOL, [])],
        [vi("a", T.FLOAT, None)], [numpy_helper.from_array(np.array(10, np.int64), "M")])
    for go in (True, False):
        c[f"loop_runtime_condition_{str(go).lower()}"] = (
            helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)]),
            {"a0": np.array([0.5, 1.0, -0.5], np.float32),
             "w": np.array([1.2, 0.9, 1.1], np.float32), "go": np.array(go)})
    c.update(device_loops())
    # Scan: running sum over axis 1, input read in reverse, output stacked on axis 1.
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "x_t"], ["s_out"]),
         helper.make_node("Tanh", ["s_out"], ["y_t"])], "body",
        [vi("s_in", T.FLOAT, [2]), vi("x_t", T.FLOAT, [2])],
        [vi("s_out", T.FLOAT, [2]), vi("y_t", T.FLOAT, [2])])
    g = helper.make_graph(
        [helper.make_node("Scan", ["s0", "xs"], ["s", "ys"], body=body, num_scan_inputs=1,
                          scan_input_axes=[1], scan_input_directions=[1], scan_output_axes=[1])],
        "scan_case", [vi("s0", T.FLOAT, [2]), vi("xs", T.FLOAT, [2, 5])],
        [vi("s", T.FLOAT, None), vi("ys", T.FLOAT, None)])
    c["scan_reverse_axis1"] = (helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)]),
                               {"s0": f32(2), "xs": f32(2, 5)})
    return c


def device_loops():
    """Loops that cannot be unrolled run on the device (tg.loop, a LOOP step running the body's
    own package; on CUDA a conditional WHILE node): a trip count known only at run time, a
    while loop decided at run time, more iterations than an unroll takes, nested loops, a GEMM in
    the body, carried values that swap."""
    rng = np.random.default_rng(21)
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)
    T = TensorProto
    vi = helper.make_tensor_value_info
    model = lambda g: helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)])
    c = {}
    # acc = acc * w + i (w an outer graph input, `one` an outer constant), k = k + 1; M at run time.
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Cast", ["i"], ["fi"], to=T.FLOAT),
         helper.make_node("Mul", ["acc", "w"], ["m"]),
         helper.make_node("Add", ["m", "fi"], ["acc_out"]),
         helper.make_node("Add", ["k", "one"], ["k_out"])], "body",
        [vi("i", T.INT64, []), vi("cond_in", T.BOOL, []), vi("acc", T.FLOAT, [3]),
         vi("k", T.INT64, [1])],
        [vi("cond_out", T.BOOL, []), vi("acc_out", T.FLOAT, [3]), vi("k_out", T.INT64, [1])])
    g = helper.make_graph(
        [helper.make_node("Loop", ["M", "", "a0", "k0"], ["a", "k"], body=body)], "loop_dev",
        [vi("M", T.INT64, []), vi("a0", T.FLOAT, [3]), vi("w", T.FLOAT, [3])],
        [vi("a", T.FLOAT, None), vi("k", T.INT64, None)],
        [numpy_helper.from_array(np.array([0], np.int64), "k0"),
         numpy_helper.from_array(np.array([1], np.int64), "one")])
    for m in (0, 1, 7):
        c[f"loop_device_trip_count_{m}"] = (model(g), {
            "M": np.array(m, np.int64), "a0": f32(3),
            "w": np.array([0.9, 1.1, -0.5], np.float32)})
    # A while loop: no trip count, the initial condition a graph input, the body's computed.
    body = helper.make_graph(
        [helper.make_node("Mul", ["acc", "w"], ["m"]),
         helper.make_node("Add", ["m", "one"], ["acc_out"]),
         helper.make_node("ReduceSum", ["acc_out"], ["tot"], keepdims=0),
         helper.make_node("Less", ["tot", "limit"], ["cond_out"])], "body",
        [vi("i", T.INT64, []), vi("cond_in", T.BOOL, []), vi("acc", T.FLOAT, [3])],
        [vi("cond_out", T.BOOL, []), vi("acc_out", T.FLOAT, [3])],
        [numpy_helper.from_array(np.ones(3, np.float32), "one"),
         numpy_helper.from_array(np.array(40.0, np.float32), "limit")])
    g = helper.make_graph(
        [helper.make_node("Loop", ["", "go", "a0"], ["a"], body=body)], "loop_while",
        [vi("a0", T.FLOAT, [3]), vi("w", T.FLOAT, [3]), vi("go", T.BOOL, [])],
        [vi("a", T.FLOAT, None)])
    for go in (True, False):
        c[f"loop_device_while_{str(go).lower()}"] = (model(g), {
            "a0": np.array([0.5, 1.0, -0.5], np.float32),
            "w": np.array([1.2, 0.9, 1.1], np.float32), "go": np.array(go)})
    # Both the trip count and the condition decided at run time; the body's condition output
    # is a carried input (the flag computed in the previous iteration), and a carried output is
    # the iteration number itself. M = -1 runs nothing.
    body = helper.make_graph(
        [helper.make_node("Identity", ["flag"], ["cond_out"]),
         helper.make_node("Mul", ["acc", "w"], ["acc_out"]),
         helper.make_node("ReduceSum", ["acc_out"], ["tot"], keepdims=0),
         helper.make_node("Less", ["tot", "limit"], ["flag_out"]),
         helper.make_node("Identity", ["i"], ["last_out"])], "body",
        [vi("i", T.INT64, []), vi("cond_in", T.BOOL, []), vi("acc", T.FLOAT, [3]),
         vi("flag", T.BOOL, []), vi("last", T.INT64, [])],
        [vi("cond_out", T.BOOL, []), vi("acc_out", T.FLOAT, [3]), vi("flag_out", T.BOOL, []),
         vi("last_out", T.INT64, [])],
        [numpy_helper.from_array(np.array(20.0, np.float32), "limit")])
    g = helper.make_graph(
        [helper.make_node("Loop", ["M", "go", "a0", "go", "l0"], ["a", "flag", "last"],
                          body=body)], "loop_flags",
        [vi("M", T.INT64, []), vi("go", T.BOOL, []), vi("a0", T.FLOAT, [3]),
         vi("w", T.FLOAT, [3])],
        [vi("a", T.FLOAT, None), vi("flag", T.BOOL, None), vi("last", T.INT64, None)],
        [numpy_helper.from_array(np.array(-7, np.int64), "l0")])
    for m in (-1, 50):
        c[f"loop_device_condition_carried_m{m}".replace("-", "neg")] = (model(g), {
            "M": np.array(m, np.int64), "go": np.array(True),
            "a0": np.array([1.0, 2.0, 0.5], np.float32),
            "w": np.array([1.5, 1.2, 2.0], np.float32)})
    # A constant trip count beyond the unroll limit (5000 > 4096): the sum of the iteration
    # numbers (exact in int64) shows every iteration ran; the float recurrence contracts (0.5),
    # so rounding differences (an FMA or not) do not build up over the iterations.
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Mul", ["acc", "decay"], ["m"]),
         helper.make_node("Add", ["m", "x"], ["acc_out"]),
         helper.make_node("Add", ["total", "i"], ["total_out"])], "body",
        [vi("i", T.INT64, []), vi("cond_in", T.BOOL, []), vi("acc", T.FLOAT, [4]),
         vi("total", T.INT64, [])],
        [vi("cond_out", T.BOOL, []), vi("acc_out", T.FLOAT, [4]), vi("total_out", T.INT64, [])],
        [numpy_helper.from_array(np.full(4, 0.5, np.float32), "decay")])
    g = helper.make_graph(
        [helper.make_node("Loop", ["M", "", "a0", "t0"], ["a", "t"], body=body)], "loop_long",
        [vi("a0", T.FLOAT, [4]), vi("x", T.FLOAT, [4])],
        [vi("a", T.FLOAT, None), vi("t", T.INT64, None)],
        [numpy_helper.from_array(np.array(5000, np.int64), "M"),
         numpy_helper.from_array(np.array(0, np.int64), "t0")])
    c["loop_device_5000_iterations"] = (model(g), {"a0": f32(4), "x": f32(4)})
    # A GEMM in the body: h = tanh(h @ W + x), W an outer constant, x an outer input.
    W = (f32(8, 8) * 0.4).astype(np.float32)
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("MatMul", ["h", "W"], ["hw"]),
         helper.make_node("Add", ["hw", "x"], ["s"]),
         helper.make_node("Tanh", ["s"], ["h_out"])], "body",
        [vi("i", T.INT64, []), vi("cond_in", T.BOOL, []), vi("h", T.FLOAT, [2, 8])],
        [vi("cond_out", T.BOOL, []), vi("h_out", T.FLOAT, [2, 8])])
    g = helper.make_graph(
        [helper.make_node("Loop", ["M", "", "h0"], ["h"], body=body)], "loop_gemm",
        [vi("M", T.INT64, []), vi("h0", T.FLOAT, [2, 8]), vi("x", T.FLOAT, [2, 8])],
        [vi("h", T.FLOAT, None)], [numpy_helper.from_array(W, "W")])
    c["loop_device_gemm_body"] = (model(g), {"M": np.array(6, np.int64), "h0": f32(2, 8),
                                             "x": f32(2, 8)})
    # Carried values that swap (a, b) -> (b, a + b): each output is the other's input slot.
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Identity", ["b"], ["a_out"]),
         helper.make_node("Add", ["a", "b"], ["b_out"])], "body",
        [vi("i", T.INT64, []), vi("cond_in", T.BOOL, []), vi("a", T.FLOAT, [2]),
         vi("b", T.FLOAT, [2])],
        [vi("cond_out", T.BOOL, []), vi("a_out", T.FLOAT, [2]), vi("b_out", T.FLOAT, [2])])
    g = helper.make_graph(
        [helper.make_node("Loop", ["M", "", "a0", "b0"], ["a", "b"], body=body)], "loop_swap",
        [vi("M", T.INT64, []), vi("a0", T.FLOAT, [2]), vi("b0", T.FLOAT, [2])],
        [vi("a", T.FLOAT, None), vi("b", T.FLOAT, None)])
    c["loop_device_swap_carried"] = (model(g), {"M": np.array(9, np.int64),
                                                "a0": np.array([0, 1], np.float32),
                                                "b0": np.array([1, 2], np.float32)})
    # Nested: the inner loop's trip count n is an outer graph input; the inner body reads the
    # outer iteration number and the outer carried value.
    inner = helper.make_graph(
        [helper.make_node("Identity", ["ci"], ["co"]),
         helper.make_node("Cast", ["i"], ["fi"], to=T.FLOAT),
         helper.make_node("Cast", ["j"], ["fj"], to=T.FLOAT),
         helper.make_node("Mul", ["fi", "fj"], ["ij"]),
         helper.make_node("Add", ["s", "ij"], ["s1"]),
         helper.make_node("Add", ["s1", "acc"], ["s_out"])], "inner",
        [vi("j", T.INT64, []), vi("ci", T.BOOL, []), vi("s", T.FLOAT, [2])],
        [vi("co", T.BOOL, []), vi("s_out", T.FLOAT, [2])])
    outer = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Loop", ["n", "", "zero"], ["s"], body=inner),
         helper.make_node("Mul", ["s", "half"], ["acc_out"])], "outer",
        [vi("i", T.INT64, []), vi("cond_in", T.BOOL, []), vi("acc", T.FLOAT, [2])],
        [vi("cond_out", T.BOOL, []), vi("acc_out", T.FLOAT, [2])])
    g = helper.make_graph(
        [helper.make_node("Loop", ["M", "", "a0"], ["a"], body=outer)], "loop_nested",
        [vi("M", T.INT64, []), vi("n", T.INT64, []), vi("a0", T.FLOAT, [2])],
        [vi("a", T.FLOAT, None)],
        [numpy_helper.from_array(np.zeros(2, np.float32), "zero"),
         numpy_helper.from_array(np.full(2, 0.5, np.float32), "half")])
    c["loop_device_nested"] = (model(g), {"M": np.array(4, np.int64), "n": np.array(3, np.int64),
                                          "a0": np.array([1, -1], np.float32)})
    # An If on a condition known only at run time whose branches hold a GEMM: only the chosen
    # branch runs (each branch a body of one iteration).
    W1, W2, b1 = f32(4, 4), f32(4, 4), f32(4)
    then_g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W1"], ["t0"]),
         helper.make_node("Add", ["t0", "b1"], ["t"])], "then", [], [vi("t", T.FLOAT, None)])
    else_g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W2"], ["e0"]),
         helper.make_node("Tanh", ["e0"], ["e"])], "else", [], [vi("e", T.FLOAT, None)])
    g = helper.make_graph(
        [helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)],
        "if_device", [vi("x", T.FLOAT, [2, 4]), vi("c", T.BOOL, [])], [vi("y", T.FLOAT, None)],
        [numpy_helper.from_array(W1, "W1"), numpy_helper.from_array(W2, "W2"),
         numpy_helper.from_array(b1, "b1")])
    for flag in (True, False):
        c[f"loop_device_if_branch_{str(flag).lower()}"] = (model(g), {
            "x": f32(2, 4), "c": np.array(flag)})
    # That If inside a loop's body, its condition the iteration number: device control flow
    # nested in device control flow.
    then_g = helper.make_graph([helper.make_node("MatMul", ["acc", "W1"], ["t0"]),
                                helper.make_node("Tanh", ["t0"], ["t"])], "then", [],
                               [vi("t", T.FLOAT, None)])
    else_g = helper.make_graph([helper.make_node("Mul", ["acc", "half"], ["e"])], "else", [],
                               [vi("e", T.FLOAT, None)])
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Less", ["i", "two"], ["early"]),
         helper.make_node("If", ["early"], ["acc_out"], then_branch=then_g, else_branch=else_g)],
        "body", [vi("i", T.INT64, []), vi("cond_in", T.BOOL, []), vi("acc", T.FLOAT, [2, 4])],
        [vi("cond_out", T.BOOL, []), vi("acc_out", T.FLOAT, [2, 4])])
    g = helper.make_graph(
        [helper.make_node("Loop", ["M", "", "a0"], ["a"], body=body)], "loop_if",
        [vi("M", T.INT64, []), vi("a0", T.FLOAT, [2, 4])], [vi("a", T.FLOAT, None)],
        [numpy_helper.from_array(W1, "W1"), numpy_helper.from_array(np.array(2, np.int64), "two"),
         numpy_helper.from_array(np.full((2, 4), 0.5, np.float32), "half")])
    c["loop_device_if_in_body"] = (model(g), {"M": np.array(5, np.int64), "a0": f32(2, 4)})
    return c


def pooling():
    """MaxRoiPool with the rois as a graph input (inside, across the border, tiny, scaled) and
    GlobalLpPool for p = 1, 2, 3."""
    rng = np.random.default_rng(30)
    T = TensorProto
    vi = helper.make_tensor_value_info
    mk = lambda g: helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)])
    c = {}
    x = rng.standard_normal((2, 3, 12, 10)).astype(np.float32)
    rois = np.array([[0, 1, 1, 6, 8], [1, 0, 0, 9, 11], [1, 7.4, 2.5, 14, 20], [0, 3, 3, 3, 3],
                     [1, -4, -2, 4.5, 5.5]], np.float32)
    for scale, name in ((1.0, "max_roi_pool"), (0.5, "max_roi_pool_scaled")):
        g = helper.make_graph(
            [helper.make_node("MaxRoiPool", ["x", "rois"], ["y"], pooled_shape=[3, 2],
                              spatial_scale=scale)], name,
            [vi("x", T.FLOAT, list(x.shape)), vi("rois", T.FLOAT, list(rois.shape))],
            [vi("y", T.FLOAT, None)])
        c[name] = (mk(g), {"x": x, "rois": rois})
    for p in (1, 2, 3):
        g = helper.make_graph([helper.make_node("GlobalLpPool", ["x"], ["y"], p=p)], "glp",
                              [vi("x", T.FLOAT, [2, 3, 5, 4])], [vi("y", T.FLOAT, None)])
        c[f"global_lp_pool_p{p}"] = (mk(g), {"x": rng.standard_normal((2, 3, 5, 4)).astype(np.float32)})
    return c


def cases():
    c = control_flow()
    c.update(pooling())
    c.update(convolutions())
    c.update(conv_transposes())
    c.update(large_reductions())
    c.update(gemvs())
    c["lstm_bidirectional_seq_lens"] = recurrent(
        "LSTM", 5, 3, 3, 6, "bidirectional", seq_lens=[6, 2, 4], peep=True, seed=1)
    c["lstm_reverse_seq_lens"] = recurrent("LSTM", 4, 3, 3, 5, "reverse", seq_lens=[1, 5, 3],
                                           seed=2)
    c["lstm_clip_input_forget"] = recurrent("LSTM", 4, 2, 2, 4, "forward", clip=0.7,
                                            input_forget=1, seed=3)
    c["lstm_no_bias_no_state"] = recurrent("LSTM", 3, 3, 2, 3, "bidirectional", init=False,
                                           bias=False, seed=4)
    c["lstm_activations"] = recurrent(
        "LSTM", 4, 3, 2, 4, "forward", seed=5,
        activations=["HardSigmoid", "Softsign", "Softplus"], activation_alpha=[0.3],
        activation_beta=[0.4])
    c["gru_bidirectional_lbr_seq_lens"] = recurrent(
        "GRU", 5, 4, 3, 5, "bidirectional", seq_lens=[5, 1, 3], linear_before_reset=1, seed=6)
    c["gru_reverse"] = recurrent("GRU", 4, 3, 2, 6, "reverse", seed=7)
    c["gru_reverse_seq_lens_lbr"] = recurrent("GRU", 3, 2, 4, 4, "reverse", seq_lens=[4, 2, 3, 1],
                                              linear_before_reset=1, seed=8)
    c["gru_activations"] = recurrent(
        "GRU", 4, 3, 2, 3, "forward", seed=9, activations=["Sigmoid", "Elu"],
        activation_alpha=[0.8])
    c["rnn_bidirectional_seq_lens"] = recurrent("RNN", 6, 3, 2, 5, "bidirectional",
                                                seq_lens=[3, 5], seed=10)
    c["rnn_relu_leaky"] = recurrent("RNN", 4, 3, 2, 4, "bidirectional", seed=11,
                                    activations=["Relu", "LeakyRelu"], activation_alpha=[0.0, 0.2])
    c["rnn_scaled_tanh_clip"] = recurrent("RNN", 4, 3, 2, 4, "reverse", seed=12, clip=0.9,
                                          activations=["ScaledTanh"], activation_alpha=[1.5],
                                          activation_beta=[0.7])
    c["rnn_affine_thresholded"] = recurrent("RNN", 3, 2, 2, 3, "bidirectional", seed=13,
                                            activations=["Affine", "ThresholdedRelu"],
                                            activation_alpha=[0.5, 0.1], activation_beta=[0.2, 0.0])
    return c


def refusals():
    """Models tgc must refuse at compile time: {name: (model, text the error must contain)}."""
    def edit(model, **attrs):
        node = model.graph.node[0]
        node.name = "rec0"
        for k, v in attrs.items():
            for a in list(node.attribute):
                if a.name == k:
                    node.attribute.remove(a)
            if v is not None:
                node.attribute.append(helper.make_attribute(k, v))
        return model

    lstm = lambda **kw: recurrent("LSTM", 3, 2, 2, 3, **kw)[0]
    r = {}
    r["bad_direction"] = (edit(lstm(), direction="sideways"),
                          "LSTM 'rec0': direction must be forward, reverse or bidirectional")
    r["activation_count"] = (edit(lstm(), activations=["Sigmoid", "Tanh"]),
                             "LSTM 'rec0': activations lists 2 functions; expected 3")
    r["unknown_activation"] = (edit(lstm(), activations=["Sigmoid", "Gelu", "Tanh"]),
                               "LSTM 'rec0': unsupported activation function 'gelu'")
    r["affine_without_alpha"] = (edit(recurrent("RNN", 3, 2, 2, 3)[0], activations=["Affine"]),
                                 "RNN 'rec0': activation 'affine' needs an activation_alpha")
    r["hidden_size_mismatch"] = (edit(lstm(), hidden_size=4),
                                 "LSTM 'rec0': hidden_size 4 differs from R's 3")
    r["clip_not_positive"] = (edit(lstm(), clip=-1.0), "LSTM 'rec0': clip must be positive")
    r["bad_layout"] = (edit(lstm(), layout=2), "LSTM 'rec0': layout must be 0 or 1")
    r["gru_lbr_value"] = (edit(recurrent("GRU", 3, 2, 2, 3)[0], linear_before_reset=3),
                          "GRU 'rec0': input_forget and linear_before_reset must be 0 or 1")
    m = lstm()
    w = numpy_helper.to_array(m.graph.initializer[0])
    m.graph.initializer[0].CopyFrom(numpy_helper.from_array(w[:, :-1], "W"))
    r["w_shape"] = (edit(m), "LSTM 'rec0': W 1x11x2 and R 1x12x3 must be")
    m = lstm(seq_lens=[3, 3])
    m.graph.input[1].type.tensor_type.shape.dim[0].dim_value = 3
    r["seq_lens_shape"] = (edit(m), "LSTM 'rec0': sequence_lens must be an int32 tensor of shape [2]")
    r["bidirectional_w"] = (edit(lstm(), direction="bidirectional"), "must be [num_directions 2")
    vi = helper.make_tensor_value_info
    g = helper.make_graph([helper.make_node("MaxRoiPool", ["x", "r"], ["y"], name="rec0")], "g",
                          [vi("x", TensorProto.FLOAT, [1, 1, 4, 4]),
                           vi("r", TensorProto.FLOAT, [2, 5])], [vi("y", TensorProto.FLOAT, None)])
    r["max_roi_pool_no_shape"] = (helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)]),
                                  "MaxRoiPool 'rec0': pooled_shape must be two positive ints")
    g = helper.make_graph([helper.make_node("GlobalLpPool", ["x"], ["y"], name="rec0", p=0)], "g",
                          [vi("x", TensorProto.FLOAT, [1, 1, 4, 4])], [vi("y", TensorProto.FLOAT, None)])
    r["global_lp_pool_p0"] = (helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)]),
                              "GlobalLpPool 'rec0': p must be >= 1, got 0")
    then_g = helper.make_graph([helper.make_node("Identity", ["x"], ["t"])], "then", [],
                               [vi("t", TensorProto.FLOAT, None)])
    else_g = helper.make_graph([helper.make_node("ReduceSum", ["x"], ["e"], keepdims=0)], "else",
                               [], [vi("e", TensorProto.FLOAT, None)])
    g = helper.make_graph([helper.make_node("If", ["c"], ["y"], name="rec0", then_branch=then_g,
                                            else_branch=else_g)], "g",
                          [vi("x", TensorProto.FLOAT, [2, 2]), vi("c", TensorProto.BOOL, [])],
                          [vi("y", TensorProto.FLOAT, None)])
    body = helper.make_graph(
        [helper.make_node("Identity", ["acc"], ["acc_out"]),
         helper.make_node("Identity", ["acc"], ["scan"]),
         helper.make_node("ReduceSum", ["acc"], ["t"], keepdims=0),
         helper.make_node("Less", ["t", "t"], ["cond_out"])], "body",
        [vi("i", TensorProto.INT64, []), vi("c", TensorProto.BOOL, []),
         vi("acc", TensorProto.FLOAT, [2])],
        [vi("cond_out", TensorProto.BOOL, []), vi("acc_out", TensorProto.FLOAT, [2]),
         vi("scan", TensorProto.FLOAT, [2])])
    for name, ins, want in (
            ("loop_runtime_condition_scan", ["M", "", "a0"],
             "Loop 'rec0': has scan outputs and a condition known only at run time"),
            ("loop_runtime_trip_count_scan", ["m", "", "a0"],
             "Loop 'rec0': has scan outputs and runs a number of iterations known only at run "
             "time: the scan outputs' length would be decided at run time (graph input 'm'")):
        lg = helper.make_graph(
            [helper.make_node("Loop", ins, ["a", "s"], name="rec0", body=body)], "g",
            [vi("a0", TensorProto.FLOAT, [2]), vi("m", TensorProto.INT64, [])],
            [vi("a", TensorProto.FLOAT, None), vi("s", TensorProto.FLOAT, None)],
            [numpy_helper.from_array(np.array(3, np.int64), "M")])
        r[name] = (helper.make_model(lg, opset_imports=[helper.make_opsetid("", OPSET)]), want)
    # Device loops nested 9 deep: more than the runtime loads (8), refused at compile time.
    def nest_loops(depth):
        nodes = [helper.make_node("Identity", ["ci"], ["co"]),
                 helper.make_node("Add", ["s", "one"], ["s_out"])]
        if depth > 1:
            nodes[1] = helper.make_node("Loop", ["n", "", "s"], ["s_out"], name=f"lp{depth - 1}",
                                        body=nest_loops(depth - 1))
        return helper.make_graph(nodes, f"level{depth}",
                                 [vi("i", TensorProto.INT64, []), vi("ci", TensorProto.BOOL, []),
                                  vi("s", TensorProto.FLOAT, [2])],
                                 [vi("co", TensorProto.BOOL, []), vi("s_out", TensorProto.FLOAT, [2])])
    deep = helper.make_graph([helper.make_node("Loop", ["n", "", "a0"], ["a"], name="lp9",
                                               body=nest_loops(9))], "deep",
                             [vi("n", TensorProto.INT64, []), vi("a0", TensorProto.FLOAT, [2])],
                          [vi("a", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(np.ones(2, np.float32), "one")])
    r["loop_device_nested_too_deep"] = (
        helper.make_model(deep, opset_imports=[helper.make_opsetid("", OPSET)]),
        "Loop 'lp1': Loops and Ifs that run on the device nest more than 8 deep")
    r["if_runtime_branch_shapes_differ"] = (
        helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)]),
        "If 'rec0': output 0 differs between the branches (2x2 and")
    return r


def write_case(folder, model, feeds):
    import onnxruntime as ort
    os.makedirs(os.path.join(folder, "test_data_set_0"), exist_ok=True)
    onnx.save(model, os.path.join(folder, "model.onnx"))
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    outs = sess.run(None, {k: feeds[k] for k in names})
    data = os.path.join(folder, "test_data_set_0")
    for i, k in enumerate(names):
        t = numpy_helper.from_array(feeds[k], k)
        open(os.path.join(data, f"input_{i}.pb"), "wb").write(t.SerializeToString())
    for i, (o, v) in enumerate(zip(sess.get_outputs(), outs)):
        t = numpy_helper.from_array(np.asarray(v), o.name)
        open(os.path.join(data, f"output_{i}.pb"), "wb").write(t.SerializeToString())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tgc", default=os.path.join(ROOT, "bazel-bin", "tools", "tgc"))
    ap.add_argument("--target", default="cpu")
    ap.add_argument("--filter", default="")
    ap.add_argument("--write-cases", default="", help="write the cases (model + ORT data) here")
    ap.add_argument("--cases", default="", help="run cases written earlier (no onnxruntime)")
    args = ap.parse_args()

    work = tempfile.mkdtemp(prefix="tgc-ops-ort-")
    root = args.cases or args.write_cases or work
    if not args.cases:
        for name, (model, feeds) in cases().items():
            if args.filter in name:
                write_case(os.path.join(root, name), model, feeds)
    passed = failed = 0
    for name in sorted(os.listdir(root)):
        if args.filter not in name or not os.path.isdir(os.path.join(root, name)):
            continue
        case = os.path.join(root, name)
        pkg = os.path.join(work, name + ".tgpkg")
        c = subprocess.run([args.tgc, "compile", os.path.join(case, "model.onnx"), "-o", pkg,
                            "--target", args.target], capture_output=True, text=True)
        r = c
        if c.returncode == 0:
            r = subprocess.run([args.tgc, "run", pkg, "--test-data",
                                os.path.join(case, "test_data_set_0")],
                               capture_output=True, text=True)
        if c.returncode == 0 and r.returncode == 0 and name.startswith("loop_device") and \
                args.target == "cpu":
            # The reference interpreter runs tg.loop too (the body function per iteration):
            # `tgc bisect` checks its outputs against the same reference.
            r = subprocess.run([args.tgc, "bisect", os.path.join(case, "model.onnx"),
                                "--test-data", os.path.join(case, "test_data_set_0")],
                               capture_output=True, text=True)
            if "within tolerance with every rule on" not in r.stdout + r.stderr:
                r.returncode = r.returncode or 1
        if c.returncode == 0 and r.returncode == 0:
            passed += 1
            print(f"PASS {name}")
        else:
            failed += 1
            print(f"FAIL {name}: {(r.stderr or r.stdout).strip()[-600:]}")
    for name, (model, want) in refusals().items():
        if args.filter not in name:
            continue
        path = os.path.join(work, "refuse_" + name + ".onnx")
        onnx.save(model, path)
        c = subprocess.run([args.tgc, "compile", path, "-o", os.path.join(work, "r.tgpkg"),
                            "--target", args.target], capture_output=True, text=True)
        if c.returncode == 1 and want in c.stderr:
            passed += 1
            print(f"PASS refuse {name}")
        else:
            failed += 1
            print(f"FAIL refuse {name}: exit {c.returncode}, wanted {want!r} in: {c.stderr.strip()[-400:]}")
    shutil.rmtree(work, ignore_errors=True)
    print(f"ops vs ort: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
