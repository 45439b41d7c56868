#!/usr/bin/env python3
"""Tests of the tgc Python wheel (issue 27). Builds nothing: needs `bazel build //python:wheel`.

    python3 tests/python/test_python.py [WHEEL]

Creates a temporary venv (--system-site-packages: numpy and onnx from the system), installs the
wheel there (--no-deps --no-index) and runs the checks with the venv's Python from a temporary
directory, so `import tgc` can only find the installed package. Prints PASS/FAIL/SKIP per check
and ends with `python: N passed, N failed`; exit code 1 on any failure.
"""
import glob
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = os.path.join(REPO, "tests", "data", "models")


# --------------------------------------------------------------------------------------------
# Outer: venv + install, then this file again inside the venv (--inner).

def outer(argv):
    passed = failed = 0

    def report(ok, name, detail=""):
        nonlocal passed, failed
        print(("PASS " if ok else "FAIL ") + name + (f": {detail}" if detail and not ok else ""))
        passed, failed = passed + ok, failed + (not ok)
        return ok

    if argv:
        wheel = os.path.abspath(argv[0])
    else:
        found = sorted(glob.glob(os.path.join(REPO, "bazel-bin", "python", "tgc-*.whl")),
                       key=os.path.getmtime)
        wheel = found[-1] if found else ""
    if report(os.path.isfile(wheel), "wheel exists", wheel or "bazel-bin/python/tgc-*.whl: "
              "run `bazel build //python:wheel` first"):
        with tempfile.TemporaryDirectory(prefix="tgc-pytest-") as tmp:
            venv = os.path.join(tmp, "venv")
            py = os.path.join(venv, "bin", "python")
            r = subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv],
                               capture_output=True, text=True)
            if report(r.returncode == 0, "venv created", r.stderr[-2000:]):
                r = subprocess.run([py, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                                    "--disable-pip-version-check", wheel],
                                   capture_output=True, text=True)
                if report(r.returncode == 0, "pip install --no-deps --no-index <wheel>",
                          (r.stdout + r.stderr)[-2000:]):
                    work = os.path.join(tmp, "work")
                    os.mkdir(work)
                    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
                    env["TGC_TEST_WHEEL"] = wheel
                    p = subprocess.run([py, os.path.abspath(__file__), "--inner", REPO],
                                       cwd=work, env=env, capture_output=True, text=True)
                    for line in p.stdout.splitlines():
                        print(line)
                        if line.startswith("PASS "):
                            passed += 1
                        elif line.startswith("FAIL "):
                            failed += 1
                    report(p.returncode == 0 and "INNER DONE" in p.stdout,
                           "checks inside the venv ran to the end",
                           f"exit code {p.returncode}; stderr: {p.stderr[-3000:]}")
    print(f"python: {passed} passed, {failed} failed")
    return 1 if failed else 0


# --------------------------------------------------------------------------------------------
# Inner: the checks, with the venv's Python, from a directory outside the source tree.

def inner(repo):
    import threading
    import time

    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    import tgc

    tmp = tempfile.mkdtemp(prefix="tgc-pyinner-")
    cache = os.path.join(tmp, "cache")
    models = os.path.join(repo, "tests", "data", "models")

    def check(name, fn):
        try:
            detail = fn()
        except Exception as e:  # a failed check, never the end of the run
            print(f"FAIL {name}: {type(e).__name__}: {e}")
            return
        if detail is True or detail is None:
            print(f"PASS {name}")
        elif isinstance(detail, str) and detail.startswith("SKIP"):
            print(f"SKIP {name}: {detail[4:].strip()}")
        else:
            print(f"FAIL {name}: {detail}")
        sys.stdout.flush()

    def expect_error(fn, *words):
        """Runs fn; it must raise tgc.Error whose message contains every word."""
        try:
            fn()
        except tgc.Error as e:
            missing = [w for w in words if w not in str(e)]
            return True if not missing else f"message {str(e)!r} lacks {missing}"
        except Exception as e:
            return f"raised {type(e).__name__} (not tgc.Error): {e}"
        return "no error raised"

    def read_set(model, n=0):
        d = os.path.join(models, model, f"test_data_set_{n}")
        load = lambda f: numpy_helper.to_array(onnx.load_tensor(f))
        ins = [load(f) for f in sorted(glob.glob(os.path.join(d, "input_*.pb")))]
        outs = [load(f) for f in sorted(glob.glob(os.path.join(d, "output_*.pb")))]
        return ins, outs

    def rel_l2(got, want):
        got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
        if got.shape != want.shape:
            return float("inf")
        n = np.linalg.norm(want)
        return float(np.linalg.norm(got - want) / (n if n else 1.0))

    def close(outs, want, tol=1e-5):
        errs = [rel_l2(o, w) for o, w in zip(outs, want)]
        return True if len(outs) == len(want) and max(errs) < tol else f"rel_l2 {errs}"

    # ---- the installed package
    def installed():
        here = os.path.dirname(os.path.abspath(tgc.__file__))
        if os.path.realpath(here).startswith(os.path.realpath(repo) + os.sep):
            return f"imported from the source tree: {here}"
        if "site-packages" not in here:
            return f"not imported from the venv: {here}"
        return True
    check("import tgc from the venv, cwd outside the tree", installed)

    def version():
        wheel = os.path.basename(os.environ.get("TGC_TEST_WHEEL", ""))
        v = tgc.__version__
        if not v or not wheel.startswith(f"tgc-{v}-"):
            return f"__version__ {v!r} vs wheel {wheel!r}"
        return True
    check("tgc.__version__ is the driver's and the wheel's", version)
    check("tgc.Error subclasses RuntimeError", lambda: issubclass(tgc.Error, RuntimeError))

    def self_contained():
        ext = glob.glob(os.path.join(os.path.dirname(tgc.__file__), "_tgc*.so"))
        if len(ext) != 1:
            return f"extension files: {ext}"
        ldd = subprocess.run(["ldd", ext[0]], capture_output=True, text=True).stdout
        bad = [l.strip() for l in ldd.splitlines()
               if "not found" in l or any(w in l for w in ("libpython", "libMLIR", "libLLVM",
                                                            "libprotobuf", "libonnx", "libcuda",
                                                            "libnvrtc", "libtgc"))]
        return True if not bad else f"ldd: {bad}"
    check("extension needs only system libraries (ldd)", self_contained)
    check("CUTLASS plug-in installed beside the extension", lambda: os.path.isfile(
        os.path.join(os.path.dirname(tgc.__file__), "libtgc_cutlass_sm90.so")))

    # ---- compile and run the test models
    sessions = {}

    def model_check(model):
        def fn():
            pkg = os.path.join(tmp, model + ".tgpkg")
            r = tgc.compile(os.path.join(models, model, "model.onnx"), pkg, cache_dir=cache)
            if r.kernels <= 0 or os.fspath(r) != pkg or not os.path.isdir(pkg):
                return f"compile result {r!r}"
            s = tgc.Session(r)
            sessions[model] = s
            for n in (0, 1):
                ins, want = read_set(model, n)
                got = s.run(dict(zip(s.input_names, ins)))
                if list(got) != s.output_names:
                    return f"output names {list(got)} vs {s.output_names}"
                res = close(list(got.values()), want)
                if res is not True:
                    return f"test_data_set_{n}: {res}"
            return True
        return fn
    for model in ("bert_tiny", "gpt2_tiny", "parallel_mlp"):
        check(f"{model}: compile (cpu) and run test_data_set_0/1, rel_l2 < 1e-5",
              model_check(model))

    bert = os.path.join(models, "bert_tiny", "model.onnx")
    bert_in, bert_out = read_set("bert_tiny")

    def interface():
        s = sessions["bert_tiny"]
        if s.input_names != ["input_0"] or s.output_names != ["output_0"]:
            return f"names {s.input_names} {s.output_names}"
        i, o = s.inputs[0], s.outputs[0]
        if (i.dtype, i.shape, i.tgc_dtype) != (np.dtype(np.int64), (1, 32), "i64"):
            return f"input {i}"
        if (o.dtype, o.shape, o.tgc_dtype) != (np.dtype(np.float32), (1, 32, 128), "f32"):
            return f"output {o}"
        d = s.describe()
        return True if isinstance(d, str) and "kernel" in d.lower() else f"describe(): {d!r}"
    check("Session inputs/outputs/describe()", interface)

    def from_bytes():
        with open(bert, "rb") as f:
            data = f.read()
        r = tgc.compile(data, os.path.join(tmp, "bytes.tgpkg"), cache_dir=cache)
        s = tgc.Session(r.package)
        return close([s.run(bert_in)["output_0"]], bert_out)
    check("compile from bytes", from_bytes)

    def from_pathlike():
        import pathlib
        r = tgc.compile(pathlib.Path(bert), pathlib.Path(tmp) / "pathlib.tgpkg", cache_dir="")
        return close(list(tgc.Session(pathlib.Path(r.package)).run(bert_in).values()), bert_out)
    check("compile/Session from pathlib paths, no kernel cache", from_pathlike)

    def twice():
        s = sessions["gpt2_tiny"]
        ins, _ = read_set("gpt2_tiny")
        a, b = s.run(ins), s.run(ins)
        return all(np.array_equal(a[k], b[k]) for k in a) or "two runs differ"
    check("run twice gives the same result", twice)

    def positional():
        s = sessions["bert_tiny"]
        a, b = s.run([bert_in[0]]), s.run({"input_0": bert_in[0]})
        return np.array_equal(a["output_0"], b["output_0"]) or "list and dict inputs differ"
    check("positional list input equals dict input", positional)

    def non_contiguous():
        s = sessions["parallel_mlp"]
        ins, want = read_set("parallel_mlp")
        x = ins[0]
        wide = np.zeros((x.shape[0], x.shape[1] * 2), x.dtype)
        wide[:, ::2] = x
        view = wide[:, ::2]
        fortran = np.asfortranarray(x)
        if view.flags.c_contiguous or fortran.flags.c_contiguous:
            return "test arrays are contiguous"
        for arr in (view, fortran):
            res = close([s.run([arr])["output_0"]], want)
            if res is not True:
                return res
        big_endian = x.astype(x.dtype.newbyteorder(">"))
        return close([s.run([big_endian])["output_0"]], want)
    check("non-contiguous / Fortran-order / big-endian inputs", non_contiguous)

    def zero_copy():
        s = sessions["bert_tiny"]
        x = np.ascontiguousarray(bert_in[0])
        if tgc._as_input(x, s.inputs[0]) is not x:
            return "a C-contiguous input of the right dtype was copied"
        strided = np.repeat(x, 2, axis=1)[:, ::2]
        y = tgc._as_input(strided, s.inputs[0])
        if y is strided or not y.flags.c_contiguous:
            return "a strided input was not made contiguous"
        lst = tgc._as_input(x.tolist(), s.inputs[0])
        if lst.dtype != np.int64:
            return f"a list became {lst.dtype}"
        return np.array_equal(s.run([x.tolist()])["output_0"], s.run([x])["output_0"]) or \
            "list input differs"
    check("zero-copy for C-contiguous inputs; one conversion otherwise", zero_copy)

    def output_arrays():
        out = sessions["bert_tiny"].run(bert_in)["output_0"]
        ok = (isinstance(out, np.ndarray) and out.flags.c_contiguous and out.flags.writeable
              and out.flags.owndata and out.dtype == np.float32)
        return ok or f"output flags {out.flags} dtype {out.dtype}"
    check("outputs are fresh writable numpy arrays", output_arrays)

    def data_dependent():
        # NonZero's output is declared [2, 6] (its bound); run() returns each run's actual shape.
        g = helper.make_graph([helper.make_node("NonZero", ["x"], ["y"])], "nz",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.INT64, None)])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        r = tgc.compile(m.SerializeToString(), os.path.join(tmp, "nonzero.tgpkg"), cache_dir=cache)
        s = tgc.Session(r.package)
        if s.outputs[0].shape != (2, 6):
            return f"declared {s.outputs[0].shape}, expected the bound (2, 6)"
        for x in (np.array([[0, 1, 0], [2, 0, 3]], np.float32), np.zeros((2, 3), np.float32)):
            y = s.run([x])["y"]
            want = np.array(np.nonzero(x), np.int64)
            if y.shape != want.shape or not np.array_equal(y, want) or not y.flags.writeable:
                return f"got {y.shape} {y.tolist()}, expected {want.shape} {want.tolist()}"
        return True
    check("data-dependent output (NonZero): arrays at each run's actual shape", data_dependent)

    # ---- errors: tgc.Error naming what is wrong, never a crash
    missing_model = os.path.join(tmp, "no_such_model.onnx")
    check("error: bad model path", lambda: expect_error(
        lambda: tgc.compile(missing_model, os.path.join(tmp, "x.tgpkg")), "no_such_model.onnx"))
    check("error: garbage model bytes", lambda: expect_error(
        lambda: tgc.compile(b"\x08\x07garbage\xff\xff", os.path.join(tmp, "x.tgpkg"))))

    def truncated():
        with open(bert, "rb") as f:
            data = f.read()
        return expect_error(lambda: tgc.compile(data[: len(data) // 3],
                                                os.path.join(tmp, "x.tgpkg")))
    check("error: truncated model bytes", truncated)
    check("error: bad target", lambda: expect_error(
        lambda: tgc.compile(bert, os.path.join(tmp, "x.tgpkg"), target="tpu"), "tpu"))
    check("error: bad precision", lambda: expect_error(
        lambda: tgc.compile(bert, os.path.join(tmp, "x.tgpkg"), precision="fp8"), "fp8"))
    check("error: input_shapes names no input", lambda: expect_error(
        lambda: tgc.compile(bert, os.path.join(tmp, "x.tgpkg"), input_shapes={"nope": (1, 2)}),
        "nope"))
    check("error: missing package", lambda: expect_error(
        lambda: tgc.Session(os.path.join(tmp, "none.tgpkg")), "none.tgpkg"))

    s = sessions.get("bert_tiny")
    x = bert_in[0]
    check("error: wrong input dtype names the input", lambda: expect_error(
        lambda: s.run({"input_0": x.astype(np.int32)}), "input_0", "i64", "i32"))
    check("error: numpy dtype tgc lacks names the input", lambda: expect_error(
        lambda: s.run({"input_0": x.astype(np.complex64)}), "input_0", "complex64"))
    check("error: wrong input shape names the input", lambda: expect_error(
        lambda: s.run({"input_0": np.zeros((1, 31), np.int64)}), "input_0", "[1, 31]"))
    check("error: wrong input rank names the input", lambda: expect_error(
        lambda: s.run({"input_0": np.zeros((32,), np.int64)}), "input_0"))
    check("error: missing input name", lambda: expect_error(lambda: s.run({}), "input_0"))
    check("error: misnamed input", lambda: expect_error(
        lambda: s.run({"input_O": x}), "input_O", "input_0"))
    check("error: extra input", lambda: expect_error(
        lambda: s.run({"input_0": x, "extra": x}), "extra"))
    check("error: wrong number of positional inputs", lambda: expect_error(
        lambda: s.run([x, x]), "expected 1"))
    check("error: inputs neither dict nor list", lambda: expect_error(lambda: s.run(42)))
    check("error: index out of the Gather's range", lambda: expect_error(
        lambda: s.run([np.full((1, 32), 10 ** 9, np.int64)]), "input_0"))
    check("error: unconvertible list input", lambda: expect_error(
        lambda: s.run([[["a"] * 32]]), "input_0"))
    check("session still runs after errors", lambda: close([s.run([x])["output_0"]], bert_out))

    # ---- element types: a Cast to f32 per input type and a Cast from f32 per output type
    types = [("f32", TensorProto.FLOAT, np.float32), ("f64", TensorProto.DOUBLE, np.float64),
             ("f16", TensorProto.FLOAT16, np.float16), ("i64", TensorProto.INT64, np.int64),
             ("i32", TensorProto.INT32, np.int32), ("i8", TensorProto.INT8, np.int8),
             ("u8", TensorProto.UINT8, np.uint8), ("bool", TensorProto.BOOL, np.bool_),
             ("bf16", TensorProto.BFLOAT16, np.uint16), ("i16", TensorProto.INT16, np.int16),
             ("u16", TensorProto.UINT16, np.uint16), ("u32", TensorProto.UINT32, np.uint32),
             ("u64", TensorProto.UINT64, np.uint64)]

    def model_bytes(nodes, inputs, outputs, inits=()):
        g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        return m.SerializeToString()

    def bf16_bits(f):
        return (np.asarray(f, np.float32).view(np.uint32) >> 16).astype(np.uint16)

    def bf16_float(bits):
        return (bits.astype(np.uint32) << 16).view(np.float32)

    values = np.array([[0, 1, 2], [3, 4, 5]], np.float32)

    def identity_package(name, et):
        return tgc.compile(model_bytes(
            [helper.make_node("Identity", ["x"], ["y"])],
            [helper.make_tensor_value_info("x", et, [2, 3])],
            [helper.make_tensor_value_info("y", et, [2, 3])]),
            os.path.join(tmp, f"id_{name}.tgpkg"), cache_dir=cache)

    for name, et, npt in types:
        def dtype_in_out(name=name, et=et, npt=npt):
            x = bf16_bits(values) if name == "bf16" else values.astype(npt)
            si = tgc.Session(identity_package(name, et))
            if si.inputs[0].dtype != np.dtype(npt) or si.inputs[0].tgc_dtype != name:
                return f"input spec {si.inputs[0]}"
            y = si.run({"x": x})["y"]
            if y.dtype != np.dtype(npt) or not np.array_equal(y, x):
                return f"Identity({name}): {y.dtype} {y.tolist()} != {x.tolist()}"
            if name in ("f16", "bf16"):  # the CPU backend computes nothing in f16/bf16
                return True
            tin = tgc.compile(model_bytes(
                [helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT)],
                [helper.make_tensor_value_info("x", et, [2, 3])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])]),
                os.path.join(tmp, f"in_{name}.tgpkg"), cache_dir=cache)
            tout = tgc.compile(model_bytes(
                [helper.make_node("Cast", ["x"], ["y"], to=et)],
                [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                [helper.make_tensor_value_info("y", et, [2, 3])]),
                os.path.join(tmp, f"out_{name}.tgpkg"), cache_dir=cache)
            got = tgc.Session(tin).run({"x": x})["y"]
            if not np.array_equal(got, x.astype(np.float32)):
                return f"Cast({name} -> f32): {got.tolist()} != {x.tolist()}"
            y = tgc.Session(tout).run({"x": values})["y"]
            if y.dtype != np.dtype(npt) or not np.array_equal(y, x):
                return f"Cast(f32 -> {name}): {y.dtype} {y.tolist()} != {x.tolist()}"
            return True
        check(f"dtype {name}: in and out ({np.dtype(npt).name})", dtype_in_out)

    def bf16_named():
        try:
            import ml_dtypes
        except ImportError:
            return "SKIP ml_dtypes is not installed"
        s = tgc.Session(os.path.join(tmp, "id_bf16.tgpkg"))
        got = s.run({"x": values.astype(ml_dtypes.bfloat16)})["y"]
        return np.array_equal(bf16_float(got), values) or f"{got.tolist()}"
    check("dtype bf16: an ml_dtypes.bfloat16 input", bf16_named)

    # ---- input_shapes and bind_inputs
    def shapes_and_binds():
        data = model_bytes(
            [helper.make_node("Add", ["x", "b"], ["y"])],
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3]),
             helper.make_tensor_value_info("b", TensorProto.FLOAT, [3])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])])
        b = np.array([10, 20, 30], np.float32)
        r = tgc.compile(data, os.path.join(tmp, "bind.tgpkg"), input_shapes={"x": (4, 3)},
                        bind_inputs={"b": b}, cache_dir=cache)
        s = tgc.Session(r)
        if s.input_names != ["x"] or s.inputs[0].shape != (4, 3):
            return f"inputs {s.inputs}"
        x = np.arange(12, dtype=np.float32).reshape(4, 3)
        return np.array_equal(s.run([x])["y"], x + b) or "wrong sum"
    check("input_shapes and bind_inputs (ndarray)", shapes_and_binds)

    # ---- a bucketed package (issue 28): input_shapes ranges, any shape in range
    def bucketed():
        r = tgc.compile(os.path.join(models, "bert_tiny_dyn", "model.onnx"),
                        os.path.join(tmp, "bucketed.tgpkg"),
                        input_shapes={"input_0": ("1..4", (1, 32))}, cache_dir=cache)
        s = tgc.Session(r)
        i = s.inputs[0]
        if (i.shape, i.min_shape, i.dim_symbols) != ((4, 32), (1, 1), ("batch", "seq")):
            return f"inputs {s.inputs}"
        for n in (0, 1, 4):  # 1x7, 3x20, 1x1: padded into buckets, cut back
            ins, outs = read_set("bert_tiny_dyn", n)
            got = s.run(ins)["output_0"]
            if got.shape != outs[0].shape or rel_l2(got, outs[0]) > 1e-5:
                return f"set {n}: shape {got.shape}, rel_l2 {rel_l2(got, outs[0])}"
        return expect_error(lambda: s.run([np.zeros((1, 33), np.int64)]),
                            "input 'input_0' dim 1 (seq): 33 is outside 1..32")
    check("bucketed package: any shape in range, outputs at the run's shape", bucketed)

    # ---- generation (issue 29): any package but a decode package refuses it
    def not_decode():
        s = tgc.Session(os.path.join(tmp, "bucketed.tgpkg"))
        if s.max_seq != 0:
            return f"max_seq {s.max_seq}"
        return expect_error(lambda: s.generate([1, 2], 4), "not a decode package")
    check("generate: a package that is not a decode package refuses it", not_decode)

    # ---- the GIL is released while compiling and running
    def gil_released():
        done = threading.Event()
        err = []

        def work():
            try:
                tgc.compile(bert, os.path.join(tmp, "gil.tgpkg"), cache_dir="")
            except Exception as e:
                err.append(e)
            done.set()
        t = threading.Thread(target=work)
        ticks = 0
        start = time.perf_counter()
        t.start()
        while not done.is_set():
            ticks += 1
            time.sleep(0.001)
        t.join()
        secs = time.perf_counter() - start
        if err:
            return f"compile failed: {err[0]}"
        # A held GIL would stop this loop for the whole compile (~0.5 s or more).
        return ticks > secs * 100 or f"{ticks} ticks in {secs:.2f} s"
    check("GIL released during compile", gil_released)

    def threads():
        ins, want = read_set("gpt2_tiny")
        s = sessions["gpt2_tiny"]
        results, errors = [], []

        def work():
            try:
                for _ in range(5):
                    results.append(s.run(ins)["output_0"])
            except Exception as e:
                errors.append(e)
        ts = [threading.Thread(target=work) for _ in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        if errors:
            return f"{errors[0]}"
        return all(np.array_equal(r, results[0]) for r in results) and \
            close([results[0]], want) is True or "threads disagree"
    check("one Session shared by 4 threads (runs serialized)", threads)

    # ---- CUDA: compiled with NVRTC (loaded from the toolkit); no GPU needed to compile
    def cuda_compile():
        pkg = os.path.join(tmp, "cuda.tgpkg")
        try:
            tgc.compile(bert, pkg, target="cuda:sm_90", cache_dir=cache)
        except tgc.Error as e:
            if "nvrtc" in str(e).lower():
                return f"SKIP NVRTC is not available here: {e}"
            raise
        return os.path.isfile(os.path.join(pkg, "kernels.cubin")) or "no kernels.cubin"
    check("compile target=cuda:sm_90", cuda_compile)

    def cuda_load():
        pkg = os.path.join(tmp, "cuda.tgpkg")
        if not os.path.isdir(pkg):
            return "SKIP no CUDA package"
        try:
            s = tgc.Session(pkg)
        except tgc.Error as e:  # no GPU / driver here: an error, not a crash
            return f"SKIP no GPU here ({str(e).splitlines()[0][:80]}); tgc.Error raised"
        return close([s.run(bert_in)["output_0"]], bert_out)
    check("CUDA package (fp32): runs on a GPU, rel_l2 < 1e-5", cuda_load)

    def cuda_fp16_cutlass():
        """On sm_90: an fp16 package with CUTLASS GEMMs forced; the plug-in must come from
        beside the installed extension."""
        pkg = os.path.join(tmp, "cuda16.tgpkg")
        try:
            tgc.compile(bert, pkg, target="cuda:sm_90", precision="fp16", cache_dir=cache)
        except tgc.Error as e:
            if "nvrtc" in str(e).lower():
                return f"SKIP NVRTC is not available here: {e}"
            raise
        os.environ["TGC_GEMM_CUTLASS"] = "force"
        try:
            s = tgc.Session(pkg)
        except tgc.Error as e:
            return f"SKIP no GPU here ({str(e).splitlines()[0][:80]}); tgc.Error raised"
        finally:
            del os.environ["TGC_GEMM_CUTLASS"]
        res = close([s.run(bert_in)["output_0"]], bert_out, tol=1e-2)
        if res is not True:
            return res
        d = s.describe()
        plugin = os.path.join(os.path.dirname(os.path.abspath(tgc.__file__)),
                              "libtgc_cutlass_sm90.so")
        if "sm_90" not in d and "H100" not in d and "H200" not in d:
            return True  # another GPU: no CUTLASS there
        line = next((l for l in d.splitlines() if l.startswith("gemms:")), d[:300])
        return (plugin in d and "0 on CUTLASS" not in d) or f"CUTLASS not from {plugin}: {line}"
    check("CUDA package (fp16, CUTLASS forced): runs, plug-in found beside the extension",
          cuda_fp16_cutlass)

    print("INNER DONE")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "--inner":
        sys.exit(inner(sys.argv[2]))
    sys.exit(outer(sys.argv[1:]))
