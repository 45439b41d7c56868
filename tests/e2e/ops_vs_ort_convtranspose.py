"""ops_vs_ort_convtranspose.py — ConvTranspose variants for run_ops_vs_ort.py, each against
ONNX Runtime.

A strided ConvTranspose with a constant weight is imported as one convolution computing every
stride phase (frontends/onnx/ConvTransposePhases.cpp); the others keep the convolution over the
zero-inserted input. Covered: stride 2 and 3, kernels larger than, equal to, not a multiple of
and smaller than the stride (empty phases), groups, asymmetric pads, pads past the kernel's
reach (the input cropped), output_padding, output_shape with and without auto_pad, 1-D, 2-D
and 3-D, a batch; on the old path a dilated strided one and a weight fed at run time.
"""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

OPSET = 14


def convtranspose_case(x_shape, w_shape, bias=True, seed=0, weight_input=False, **attrs):
    """A one-node ConvTranspose model (weight [C, M/group, k...]) and its inputs."""
    rng = np.random.default_rng(seed)
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)
    group = attrs.get("group", 1)
    w = f32(*w_shape)
    feeds = {"x": f32(*x_shape)}
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))]
    inits = []
    if weight_input:
        feeds["W"] = w
        inputs.append(helper.make_tensor_value_info("W", TensorProto.FLOAT, list(w_shape)))
    else:
        inits.append(numpy_helper.from_array(w, "W"))
    names = ["x", "W"]
    if bias:
        inits.append(numpy_helper.from_array(f32(w_shape[1] * group), "B"))
        names.append("B")
    g = helper.make_graph([helper.make_node("ConvTranspose", names, ["y"], **attrs)], "convt",
                          inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)]), feeds


def conv_transposes():
    """{name: (model, feeds)} for the ConvTranspose variants."""
    c = {}
    ct = convtranspose_case
    c["convt_s2_k4_p1"] = ct([1, 8, 7, 9], [8, 6, 4, 4], strides=[2, 2], pads=[1, 1, 1, 1])
    c["convt_s2_k3_outpad"] = ct([2, 5, 6, 5], [5, 4, 3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                                 output_padding=[1, 1], seed=1)
    c["convt_s3_k2_empty_phase"] = ct([1, 4, 5, 6], [4, 3, 2, 2], strides=[3, 3], seed=2)
    c["convt_s3_k5_asym_pads"] = ct([1, 3, 6, 4], [3, 5, 5, 5], strides=[3, 3],
                                    pads=[0, 2, 3, 1], output_padding=[2, 1], seed=3)
    c["convt_s2_k3_grouped_no_bias"] = ct([1, 6, 5, 7], [6, 2, 3, 3], bias=False, group=3,
                                          strides=[2, 2], pads=[1, 0, 0, 1], seed=4)
    c["convt_s2_depthwise"] = ct([1, 4, 6, 6], [4, 1, 4, 4], group=4, strides=[2, 2],
                                 pads=[1, 1, 1, 1], seed=5)
    c["convt_s2_mixed_stride"] = ct([1, 3, 5, 6], [3, 4, 3, 3], strides=[2, 1],
                                    dilations=[1, 2], pads=[1, 2, 0, 1], seed=6)
    c["convt_s2_pads_past_reach"] = ct([1, 3, 9, 8], [3, 2, 3, 3], strides=[2, 2],
                                       pads=[4, 5, 3, 4], seed=7)
    c["convt_1d_s2_k5"] = ct([2, 4, 11], [4, 3, 5], strides=[2], pads=[2, 1],
                             output_padding=[1], seed=8)
    c["convt_1d_s3_k7"] = ct([1, 2, 9], [2, 5, 7], strides=[3], pads=[3, 3], seed=9)
    c["convt_3d_s2_k3"] = ct([1, 3, 4, 5, 3], [3, 4, 3, 3, 3], strides=[2, 2, 2],
                             pads=[1, 1, 1, 1, 1, 1], output_padding=[1, 0, 1], seed=10)
    c["convt_3d_s2_k2_grouped"] = ct([1, 4, 3, 4, 2], [4, 3, 2, 2, 2], group=2,
                                     strides=[2, 2, 2], seed=11)
    c["convt_same_upper_s2"] = ct([1, 3, 5, 7], [3, 4, 3, 3], strides=[2, 2],
                                  auto_pad="SAME_UPPER", seed=12)
    c["convt_output_shape_s3"] = ct([1, 3, 4, 5], [3, 2, 4, 4], strides=[3, 3],
                                    output_shape=[12, 16], seed=13)
    c["convt_s2_dilated_old_path"] = ct([1, 3, 5, 5], [3, 4, 3, 3], strides=[2, 2],
                                        dilations=[2, 2], pads=[1, 1, 1, 1], seed=14)
    c["convt_s2_weight_input_old_path"] = ct([1, 3, 5, 6], [3, 4, 4, 4], weight_input=True,
                                             strides=[2, 2], pads=[1, 1, 1, 1], seed=15)
    c["convt_s1_k3"] = ct([1, 3, 6, 6], [3, 5, 3, 3], pads=[1, 1, 1, 1], seed=16)
    return c
