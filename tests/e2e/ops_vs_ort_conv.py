"""ops_vs_ort_conv.py — convolution variants for run_ops_vs_ort.py: the CPU backend's kernel
choices (codegen/cpu/CpuConvPrelude.cpp), each against ONNX Runtime.

Depthwise (group = channels) convolutions take the direct kernel: 3x3/5x5 at stride 1 and 2,
odd sizes, asymmetric pads, dilation, a channel multiplier, 1-D, a window wider than the input,
a stride wider than the window, two large enough for CUDA's strips. Regular ones take im2col + GEMM in blocks of output rows: 3x3
at stride 1/2, 1x1 with and without stride, grouped, dilated, 1-D, batched, one large enough to
be unfolded in several blocks and run in parallel, and 3-D (unfolded whole).

Epilogues (`conv_epilogue`): a convolution and the elementwise ops after it form one "conv"
kernel (passes/kernels/FormKernels.cpp). On CUDA, cuDNN applies a ReLU, a residual add, or both
(the epilogue kernel is then skipped); other epilogues (SiLU, HardSwish, a broadcast scale) run
as a kernel after the convolution; both paths are checked, with and without a bias.
"""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

OPSET = 14


def conv_case(x_shape, w_shape, bias=True, seed=0, **attrs):
    """A one-node Conv model with random weights (initializers) and its input."""
    return conv_epilogue(x_shape, w_shape, [], bias=bias, seed=seed, **attrs)


def conv_epilogue(x_shape, w_shape, ops, bias=True, seed=0, **attrs):
    """Conv then `ops` (ONNX op types; "Add" adds a second input z of the output's shape,
    "Mul" multiplies by a per-channel input s, "PRelu" takes a per-channel constant slope, "MulConst" is x + x * c with c a per-channel
    constant), one model."""
    rng = np.random.default_rng(seed)
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)
    inits = [numpy_helper.from_array(f32(*w_shape), "W")]
    names = ["x", "W"]
    if bias:
        inits.append(numpy_helper.from_array(f32(w_shape[0]), "B"))
        names.append("B")
    nodes = [helper.make_node("Conv", names, ["t0"], **attrs)]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))]
    feeds = {"x": f32(*x_shape)}
    # The output's shape, for z: run the arithmetic of the convolution.
    sp = len(x_shape) - 2
    st, dl = attrs.get("strides", [1] * sp), attrs.get("dilations", [1] * sp)
    pd = attrs.get("pads", [0] * 2 * sp)
    y_shape = [x_shape[0], w_shape[0]] + [
        (x_shape[2 + d] + pd[d] + pd[d + sp] - dl[d] * (w_shape[2 + d] - 1) - 1) // st[d] + 1
        for d in range(sp)]
    for i, op in enumerate(ops):
        a, b = f"t{i}", f"t{i + 1}"
        if op == "Add":
            nodes.append(helper.make_node("Add", [a, "z"], [b]))
            inputs.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, y_shape))
            feeds["z"] = f32(*y_shape)
        elif op == "PRelu":  # a per-channel slope, a small constant written into the kernel
            inits.append(numpy_helper.from_array(
                (0.1 * f32(w_shape[0], *([1] * sp))).astype(np.float32), "slope"))
            nodes.append(helper.make_node("PRelu", [a, "slope"], [b]))
        elif op == "MulConst":  # x + x * c, c a per-channel constant (an array in the kernel)
            inits.append(numpy_helper.from_array(f32(w_shape[0], *([1] * sp)), "c"))
            nodes.append(helper.make_node("Mul", [a, "c"], [a + "m"]))
            nodes.append(helper.make_node("Add", [a, a + "m"], [b]))
        elif op == "Mul":
            s_shape = [1, w_shape[0]] + [1] * sp
            nodes.append(helper.make_node("Mul", [a, "s"], [b]))
            inputs.append(helper.make_tensor_value_info("s", TensorProto.FLOAT, s_shape))
            feeds["s"] = f32(*s_shape)
        else:
            nodes.append(helper.make_node(op, [a], [b]))
    nodes[-1].output[0] = "y"
    g = helper.make_graph(nodes, "conv_epilogue", inputs,
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)])
    return model, feeds


def convolutions():
    """{name: (model, feeds)} for the convolution variants."""
    c = {}
    dw = lambda ch, mult, k: [ch * mult, 1] + k
    c["conv_dw3x3_s1"] = conv_case([2, 6, 9, 11], dw(6, 1, [3, 3]), group=6, pads=[1, 1, 1, 1])
    c["conv_dw3x3_s2_odd"] = conv_case([1, 5, 13, 11], dw(5, 1, [3, 3]), group=5,
                                       strides=[2, 2], pads=[1, 1, 1, 1], seed=1)
    c["conv_dw5x5_s1"] = conv_case([1, 24, 14, 14], dw(24, 1, [5, 5]), group=24,
                                   pads=[2, 2, 2, 2], seed=2)
    c["conv_dw5x5_s2_asym_pads"] = conv_case([1, 7, 12, 10], dw(7, 1, [5, 5]), group=7,
                                             strides=[2, 2], pads=[1, 2, 2, 1], seed=3)
    c["conv_dw3x3_dilated"] = conv_case([1, 4, 10, 12], dw(4, 1, [3, 3]), group=4,
                                        dilations=[2, 3], pads=[2, 3, 2, 3], seed=4)
    c["conv_dw_multiplier_no_bias"] = conv_case([2, 3, 8, 8], dw(3, 2, [3, 3]), bias=False,
                                                group=3, pads=[1, 1, 1, 1], seed=5)
    c["conv_dw_1d_s2"] = conv_case([2, 6, 21], dw(6, 1, [5]), group=6, strides=[2], pads=[2, 1],
                                   seed=6)
    c["conv_dw_window_wider_than_input"] = conv_case([1, 8, 3, 3], dw(8, 1, [5, 5]), group=8,
                                                     pads=[2, 2, 2, 2], seed=7)
    c["conv_dw_stride_past_window"] = conv_case([1, 3, 11, 11], dw(3, 1, [2, 2]), group=3,
                                                strides=[3, 3], seed=8)
    # Large enough that CUDA's channels-last depthwise kernel gives a thread a strip of 4 (then
    # 2) outputs along W (CudaConv.cpp, depthwiseStrip), the last strip cut short.
    c["conv_dw3x3_dilated_strips"] = conv_case([1, 16, 66, 262], dw(16, 1, [3, 3]), group=16,
                                               dilations=[2, 2], pads=[2, 2, 2, 2], seed=30)
    c["conv_dw5x5_asym_pads_strips"] = conv_case([1, 12, 90, 160], dw(12, 1, [5, 5]), group=12,
                                                 pads=[1, 2, 3, 1], seed=31)
    c["conv_3x3_s1"] = conv_case([1, 8, 10, 9], [12, 8, 3, 3], pads=[1, 1, 1, 1], seed=9)
    c["conv_3x3_s2_batch"] = conv_case([2, 5, 11, 13], [7, 5, 3, 3], strides=[2, 2],
                                       pads=[1, 0, 0, 1], seed=10)
    c["conv_1x1"] = conv_case([2, 16, 7, 5], [9, 16, 1, 1], seed=11)
    c["conv_1x1_s2"] = conv_case([1, 16, 9, 9], [8, 16, 1, 1], strides=[2, 2], seed=12)
    c["conv_grouped"] = conv_case([1, 8, 9, 9], [6, 4, 3, 3], group=2, pads=[1, 1, 1, 1],
                                  seed=13)
    c["conv_dilated"] = conv_case([1, 4, 12, 12], [5, 4, 3, 3], dilations=[2, 2],
                                  pads=[2, 2, 2, 2], seed=14)
    c["conv_1d_s2"] = conv_case([2, 6, 30], [8, 6, 3], strides=[2], pads=[1, 1], seed=15)
    c["conv_large_blocks"] = conv_case([1, 32, 64, 64], [15, 32, 3, 3], pads=[1, 1, 1, 1],
                                       seed=16)
    c["conv_3d"] = conv_case([1, 3, 5, 6, 7], [4, 3, 3, 3, 3], pads=[1, 1, 1, 1, 1, 1],
                             seed=17)
    # Epilogues (see the module's docstring).
    p1 = dict(pads=[1, 1, 1, 1])
    c["conv_relu"] = conv_epilogue([1, 8, 10, 9], [12, 8, 3, 3], ["Relu"], seed=20, **p1)
    c["conv_add_relu"] = conv_epilogue([2, 8, 10, 9], [8, 8, 3, 3], ["Add", "Relu"], seed=21,
                                       **p1)
    c["conv_add"] = conv_epilogue([1, 16, 7, 5], [16, 16, 3, 3], ["Add"], seed=22, **p1)
    # 1x1 at stride 1: a matmul (LowerPointwiseConvToMatmul) with the epilogue after it.
    c["conv_1x1_add_relu"] = conv_epilogue([2, 16, 7, 5], [12, 16, 1, 1], ["Add", "Relu"],
                                           seed=30)
    c["conv_relu_no_bias_s2"] = conv_epilogue([1, 6, 11, 13], [10, 6, 3, 3], ["Relu"],
                                              bias=False, seed=23, strides=[2, 2], **p1)
    c["conv_dw_relu"] = conv_epilogue([1, 12, 9, 9], [12, 1, 3, 3], ["Relu"], seed=24, group=12,
                                      **p1)
    c["conv_silu"] = conv_epilogue([1, 8, 9, 9], [8, 8, 3, 3], ["Sigmoid"], seed=25, **p1)
    c["conv_hardswish"] = conv_epilogue([1, 8, 9, 9], [16, 8, 3, 3], ["HardSwish"], seed=26,
                                        strides=[2, 2], **p1)
    c["conv_relu_scale"] = conv_epilogue([1, 8, 9, 9], [8, 8, 3, 3], ["Relu", "Mul"], seed=27,
                                         **p1)
    c["conv_asym_pads_relu"] = conv_epilogue([1, 4, 9, 9], [6, 4, 3, 3], ["Relu"], seed=28,
                                             pads=[0, 1, 1, 0])
    c["conv_1d_add_relu"] = conv_epilogue([1, 8, 40], [8, 8, 3], ["Add", "Relu"], seed=29,
                                          pads=[1, 1])
    # PRelu reads x three times (where(x < 0, x * slope, x)) and its slope is a constant array
    # of the kernel: on CUDA both the own kernel (which applies it) and the epilogue kernel read it.
    c["conv_prelu"] = conv_epilogue([1, 8, 9, 9], [12, 8, 3, 3], ["PRelu"], seed=32, **p1)
    c["conv_const_scale_residual"] = conv_epilogue([1, 8, 9, 9], [12, 8, 3, 3], ["MulConst"],
                                                   seed=34, **p1)
    c["conv_dw_prelu"] = conv_epilogue([1, 16, 12, 12], [16, 1, 3, 3], ["PRelu"], seed=33,
                                       group=16, **p1)
    return c
