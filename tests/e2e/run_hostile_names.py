#!/usr/bin/env python3
"""run_hostile_names.py — legal ONNX models whose names and strings are hostile compile, run
correctly and print nothing they did not mean to, on the CPU and CUDA backends (issue 23).

Each case puts one hostile string (a newline or CR followed by a line of C++, `*/`, a backslash
before a newline, a trigraph, quotes, U+2028, NUL, 64 KiB, C++ keywords, tgc's own generated
identifiers) into every place a model holds text: graph inputs and outputs, initializers,
intermediate tensors, node names, graph and model names, doc strings (model, graph, node,
attribute), the model's domain, producer and metadata. Then, through the `tgc` CLI:
  - `tgc compile` (CPU: host compiler; CUDA: NVRTC, which needs no GPU) succeeds;
  - the generated source (--dump-dir) is printable ASCII and every line that holds planted text
    is a `//` comment; the planted line, had it become code, would create a marker file — it
    must not exist after compile, run and inspect;
  - `tgc run --test-data` matches a numpy reference (CPU; CUDA where a GPU is usable, or always
    with --require-gpu);
  - everything tgc prints (compile, run, inspect) is text: valid UTF-8 without control
    characters (but newlines) or line separators.
Last line: `hostile names: N passed, N failed`.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

# Text that would be C++ if it left its comment: it creates MARKER at load time.
PLANT = 'static int tgc_planted = system("touch MARKER");'


def cases(marker):
    plant = PLANT.replace("MARKER", marker)
    return {
        "newline": "n\n" + plant + "\n",
        "carriage_return": "n\r" + plant + "\r",
        "crlf": "n\r\n" + plant + "\r\n//",
        "comment_end": "n */ " + plant + " /* ",
        "backslash_newline": "n \\\n" + plant,
        "trigraph": "n ??/\n" + plant + " ??= ??' ??!",
        "quotes": 'n " \' "" ' + plant + ' "',
        "u2028": "n\u2028" + plant + "\u2029\u0085",
        "nul": "n\x00" + plant,
        "tab_escape": "n\t\x1b[31m\x07" + plant,
        "long_64k": "n" + "x" * 65536,
        "keyword_int": "int",
        "keyword_return": "return",
        "generated_ids": "tgk_0_cast",
        "percent": "100% %25 %s %n",
    }


def build(name, text):
    """The model with `text` (made unique per slot) in every text field, its inputs and
    reference outputs."""
    def nm(slot):  # a graph name must be unique: the slot's number after the text
        return text + "#" + slot

    rng = np.random.default_rng(len(text))
    x = rng.standard_normal((4, 8)).astype(np.float32)
    y = rng.standard_normal((4, 16)).astype(np.float32)
    w = (rng.standard_normal((8, 16)) * 0.3).astype(np.float32)
    b = rng.standard_normal(16).astype(np.float32)
    X, Y, W, B = nm("in0"), nm("in1"), nm("w"), nm("b")
    T1, T2, T3, T4 = nm("t1"), nm("t2"), nm("t3"), nm("t4")
    O0, O1 = nm("out0"), nm("out1")
    nodes = [
        helper.make_node("MatMul", [X, W], [T1], name=nm("n0"), doc_string=nm("doc0")),
        helper.make_node("Add", [T1, B], [T2], name=nm("n1")),
        helper.make_node("Relu", [T2], [T3], name=nm("n2")),
        helper.make_node("Mul", [T3, Y], [T4], name=nm("n3")),
        helper.make_node("Softmax", [T4], [O0], name=nm("n4"), axis=-1),
        helper.make_node("Transpose", [T3], [O1], name=nm("n5"), perm=[1, 0]),
    ]
    nodes[4].attribute[0].doc_string = nm("attrdoc")
    graph = helper.make_graph(
        nodes, nm("graph"),
        [helper.make_tensor_value_info(X, TensorProto.FLOAT, [4, 8]),
         helper.make_tensor_value_info(Y, TensorProto.FLOAT, [4, 16])],
        [helper.make_tensor_value_info(O0, TensorProto.FLOAT, [4, 16]),
         helper.make_tensor_value_info(O1, TensorProto.FLOAT, [16, 4])],
        [numpy_helper.from_array(w, W), numpy_helper.from_array(b, B)],
        doc_string=nm("graphdoc"),
        value_info=[helper.make_tensor_value_info(T2, TensorProto.FLOAT, [4, 16])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name=nm("producer"), doc_string=nm("modeldoc"))
    model.domain = nm("domain")
    model.ir_version = 8
    helper.set_model_props(model, {nm("key"): nm("value")})
    t3 = np.maximum(x @ w + b, 0)
    t4 = t3 * y
    e = np.exp(t4 - t4.max(axis=-1, keepdims=True))
    outs = [(O0, e / e.sum(axis=-1, keepdims=True)), (O1, t3.T.copy())]
    return model, [(X, x), (Y, y)], outs


def printable(s):
    """No control characters but newlines (C0, DEL, C1), no line or paragraph separators, valid
    UTF-8: what a terminal shows as text. (tgc's own messages hold a few non-ASCII signs such as
    the multiplication sign; model text is printed escaped to ASCII.)"""
    try:
        t = s.encode("latin-1").decode("utf-8")
    except UnicodeError:
        return False
    return all(c == "\n" or (0x20 <= ord(c) != 0x7F and not 0x80 <= ord(c) <= 0x9F
                              and c not in "\u2028\u2029") for c in t)


def check_source(path, marker_word):
    """Problems with a generated source file: bytes outside printable ASCII, or planted text on a
    line that is not a `//` comment."""
    data = open(path, "rb").read()
    bad = [i for i, c in enumerate(data) if not (c == 10 or 0x20 <= c <= 0x7E)]
    if bad:
        return "%s: %d bytes outside printable ASCII (first at %d)" % (path, len(bad), bad[0])
    for n, line in enumerate(data.decode().split("\n"), 1):
        if marker_word in line and not line.lstrip().startswith("//"):
            return "%s:%d: planted text outside a comment: %s" % (path, n, line[:120])
    return None


def run(cmd, **kw):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)
    return p.returncode, p.stdout.decode("latin-1"), p.stderr.decode("latin-1")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tgc", default=os.path.join(ROOT, "bazel-bin", "tools", "tgc"))
    ap.add_argument("--require-gpu", action="store_true",
                    help="run the CUDA packages too; fail where no GPU is usable")
    ap.add_argument("--only", default="", help="comma-separated case names")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="tgc_hostile_")
    marker = os.path.join(work, "PLANTED_CODE_RAN")
    passed = failed = skipped = 0
    gpu = None  # unknown until the first CUDA run
    try:
        for case, text in cases(marker).items():
            if args.only and case not in args.only.split(","):
                continue
            model, inputs, outputs = build(case, text)
            d = os.path.join(work, case)
            os.makedirs(os.path.join(d, "test_data_set_0"))
            onnx.save(model, os.path.join(d, "model.onnx"))
            for i, (n, a) in enumerate(inputs):
                with open(os.path.join(d, "test_data_set_0", "input_%d.pb" % i), "wb") as f:
                    f.write(numpy_helper.from_array(a, n).SerializeToString())
            for i, (n, a) in enumerate(outputs):
                with open(os.path.join(d, "test_data_set_0", "output_%d.pb" % i), "wb") as f:
                    f.write(numpy_helper.from_array(a, n).SerializeToString())
            for target in ("cpu", "cuda:sm_90"):
                label = "%s %s" % (case, target)
                pkg, dump = os.path.join(d, "pkg_" + target[:4]), os.path.join(d, "dump_" + target[:4])
                problems = []
                printed = ""
                rc, out, err = run([args.tgc, "compile", os.path.join(d, "model.onnx"), "-o", pkg,
                                    "--target=" + target, "--dump-dir=" + dump])
                printed += out + err
                if rc != 0:
                    problems.append("compile exit %d: %s" % (rc, (out + err)[-400:]))
                else:
                    src = os.path.join(dump, "kernels.cpp" if target == "cpu" else "kernels.cu")
                    why = check_source(src, "tgc_planted")
                    if why:
                        problems.append(why)
                    rc, out, err = run([args.tgc, "inspect", pkg])
                    printed += out + err
                    if rc != 0:
                        problems.append("inspect exit %d" % rc)
                    rc, out, err = run([args.tgc, "run", pkg, "--test-data",
                                        os.path.join(d, "test_data_set_0")])
                    printed += out + err
                    no_gpu = target != "cpu" and rc != 0 and re.search(
                        r"CUDA driver|no CUDA device|no usable GPU|libcuda", out + err)
                    if no_gpu and not args.require_gpu:
                        gpu = False
                    elif rc != 0 or out.count("PASS") != 2:
                        problems.append("run exit %d: %s" % (rc, (out + err)[-400:]))
                    elif target != "cpu":
                        gpu = True
                if not printable(printed):
                    problems.append("printed control characters or invalid UTF-8: %r" %
                                    [c for c in printed if ord(c) < 0x20 and c != "\n"][:5])
                if any(l.lstrip().startswith("static int tgc_planted") for l in
                       re.split(r"[\n\r]", printed)):
                    problems.append("a planted line was printed as a line of its own")
                if os.path.exists(marker):
                    problems.append("THE PLANTED LINE RAN")
                    os.remove(marker)
                if problems:
                    failed += 1
                    print("FAIL %s: %s" % (label, "; ".join(problems)))
                else:
                    passed += 1
                    print("PASS %s%s" % (label, " (compiled; no GPU to run it)"
                                         if target != "cpu" and gpu is False else ""))
                shutil.rmtree(pkg, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("hostile names: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
