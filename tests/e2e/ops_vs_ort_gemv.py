"""ops_vs_ort_gemv.py — matrix-vector products with an epilogue, for run_ops_vs_ort.py: on CUDA
these run as one kernel, the GEMV and its epilogue (codegen/cuda/CudaGemv.cpp), instead of a
GEMM step and an epilogue kernel. Cases: a squeeze-excitation block (its two 1x1 convolutions on
the pooled vector, ReLU, hardsigmoid through a reshape), a depth not a multiple of the 16-byte
load (scalar loads), a long depth (the loop that does not hold the row in registers), a vector
per batch against one matrix, a linear of one row with its bias, a matrix that is no weight, an
epilogue reading another input, and a matrix over the size limit (stays a GEMM step).
"""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

OPSET = 13
T = TensorProto


def _model(nodes, inputs, inits):
    g = helper.make_graph(nodes, "gemv",
                          [helper.make_tensor_value_info(n, T.FLOAT, s) for n, s in inputs],
                          [helper.make_tensor_value_info("y", T.FLOAT, None)],
                          [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)])


def _se(c=64, r=16, hw=7, seed=0):
    rng = np.random.default_rng(seed)
    inits = {
        "w1": (rng.standard_normal((r, c, 1, 1)) / np.sqrt(c)).astype(np.float32),
        "b1": rng.standard_normal(r).astype(np.float32) * 0.1,
        "w2": (rng.standard_normal((c, r, 1, 1)) / np.sqrt(r)).astype(np.float32),
        "b2": rng.standard_normal(c).astype(np.float32) * 0.1,
        "wd": (rng.standard_normal((c, 1, 3, 3)) / 3).astype(np.float32),
    }
    nodes = [
        # a depthwise convolution first: what makes the region channels last on CUDA
        helper.make_node("Conv", ["x", "wd"], ["d"], group=c, pads=[1, 1, 1, 1]),
        helper.make_node("GlobalAveragePool", ["d"], ["p"]),
        helper.make_node("Conv", ["p", "w1", "b1"], ["f1"]),
        helper.make_node("Relu", ["f1"], ["a1"]),
        helper.make_node("Conv", ["a1", "w2", "b2"], ["f2"]),
        helper.make_node("HardSigmoid", ["f2"], ["s"], alpha=1 / 6, beta=0.5),
        helper.make_node("Mul", ["d", "s"], ["y"]),
    ]
    x = rng.standard_normal((1, c, hw, hw)).astype(np.float32)
    return _model(nodes, [("x", [1, c, hw, hw])], inits), {"x": x}


def _matmul(rows, k, epilogue, batch=None, seed=0, weight=True, bias=True):
    """y = epilogue(W [rows, k] · x [(batch,) k, 1] (+ b [rows, 1]))."""
    rng = np.random.default_rng(seed)
    w = (rng.standard_normal((rows, k)) / np.sqrt(k)).astype(np.float32)
    xs = [batch, k, 1] if batch else [k, 1]
    inputs, inits = [("x", xs)], {}
    if weight:
        inits["w"] = w
    else:
        inputs.append(("w", [rows, k]))
    nodes = [helper.make_node("MatMul", ["w", "x"], ["m"])]
    last = "m"
    if bias:
        inits["b"] = rng.standard_normal((rows, 1)).astype(np.float32) * 0.1
        nodes.append(helper.make_node("Add", ["m", "b"], ["mb"]))
        last = "mb"
    if epilogue == "silu":
        nodes += [helper.make_node("Sigmoid", [last], ["sg"]),
                  helper.make_node("Mul", [last, "sg"], ["y"])]
    elif epilogue == "residual":
        inputs.append(("r", [rows, 1]))
        nodes.append(helper.make_node("Add", [last, "r"], ["y"]))
    else:
        nodes.append(helper.make_node(epilogue, [last], ["y"]))
    feeds = {"x": rng.standard_normal(xs).astype(np.float32)}
    if not weight:
        feeds["w"] = w
    if epilogue == "residual":
        feeds["r"] = rng.standard_normal((rows, 1)).astype(np.float32)
    return _model(nodes, inputs, inits), feeds


def _linear_row(n, k, seed=0):
    rng = np.random.default_rng(seed)
    inits = {"w": (rng.standard_normal((n, k)) / np.sqrt(k)).astype(np.float32),
             "b": rng.standard_normal(n).astype(np.float32) * 0.1}
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["g"], transB=1),
             helper.make_node("Tanh", ["g"], ["y"])]
    return _model(nodes, [("x", [1, k])], inits), {
        "x": rng.standard_normal((1, k)).astype(np.float32)}


def gemvs():
    return {
        "gemv_squeeze_excitation": _se(seed=1),
        "gemv_odd_depth_sigmoid": _matmul(40, 37, "Sigmoid", seed=2),
        "gemv_long_depth_silu": _matmul(24, 3000, "silu", seed=3),
        "gemv_vector_per_batch_relu": _matmul(16, 32, "Relu", batch=3, seed=4, bias=False),
        "gemv_linear_row_bias_tanh": _linear_row(20, 50, seed=5),
        "gemv_matrix_not_weight": _matmul(12, 16, "Relu", seed=6, weight=False),
        "gemv_epilogue_reads_input": _matmul(33, 64, "residual", seed=7),
        "gemv_matrix_over_limit": _matmul(600, 512, "Relu", seed=8),
    }
