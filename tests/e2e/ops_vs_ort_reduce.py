"""ops_vs_ort_reduce.py — reductions over many elements per output, for run_ops_vs_ort.py: on
CUDA these take a block per output (codegen/cuda/CudaRowKernels.cpp, kBlockReduceMin): a global
average pool, a sum over two strided axes, a max along a long row, a min over axes that are not
adjacent, each against ONNX Runtime. Reductions over middle dims with the innermost kept (a
channels-last global pool) take codegen/cuda/CudaColumnReduce.cpp's kernel instead: rows split
over many blocks (the last block combining their partial results) or not, a last tile of fewer
than 32 outputs, several outer rows, size-1 dims among the reduced ones.
"""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

OPSET = 13


def reduce_case(op, shape, axes, keepdims=1, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    inits, ins = [], ["x"]
    attrs = {"keepdims": keepdims}
    if op == "ReduceSum":  # opset 13: axes is an input
        inits.append(numpy_helper.from_array(np.array(axes, np.int64), "axes"))
        ins.append("axes")
    else:
        attrs["axes"] = axes
    g = helper.make_graph([helper.make_node(op, ins, ["y"], **attrs)], "reduce",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)]), {"x": x}


def large_reductions():
    return {
        "reduce_large_mean_gap": reduce_case("ReduceMean", [2, 16, 48, 48], [2, 3], seed=1),
        "reduce_large_sum_strided": reduce_case("ReduceSum", [4, 8, 600], [0, 2], 0, seed=2),
        "reduce_large_max_row": reduce_case("ReduceMax", [3, 2000], [1], seed=3),
        "reduce_large_min_split_axes": reduce_case("ReduceMin", [2, 40, 3, 30], [1, 3], seed=4),
        "reduce_column_mean_split": reduce_case("ReduceMean", [1, 64, 64, 32], [1, 2], seed=5),
        "reduce_column_sum_outer": reduce_case("ReduceSum", [2, 28, 28, 96], [1, 2], 0, seed=6),
        "reduce_column_max_tail": reduce_case("ReduceMax", [3, 40, 50], [1], seed=7),
        "reduce_column_min_unit_dims": reduce_case("ReduceMin", [2, 1, 200, 1, 300], [1, 2, 3],
                                                   seed=8),
    }
