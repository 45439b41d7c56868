"""tgc — an ahead-of-time tensor-graph compiler: ONNX model -> package -> run.

    import tgc, numpy as np
    pkg = tgc.compile("model.onnx", "model.tgpkg")            # target="cpu", precision="fp32"
    s = tgc.Session(pkg)
    out = s.run({"input_ids": np.zeros((1, 32), np.int64)})   # {name: ndarray}

Every failure raises tgc.Error (a RuntimeError) with the message the `tgc` CLI prints.
See README.md beside this package's sources (python/README.md) for the rules on arrays.
"""

import collections
import collections.abc
import os
import shutil
import tempfile

import numpy as np

from . import _tgc

__all__ = ["compile", "Session", "Error", "TensorInfo", "CompileResult", "__version__"]

Error = _tgc.Error
Error.__module__ = "tgc"
Error.__doc__ = "Every tgc failure (compile, load, run): the message tgc prints."
__version__ = _tgc.__version__

TensorInfo = collections.namedtuple(
    "TensorInfo", ["name", "dtype", "shape", "tgc_dtype", "min_shape", "dim_symbols"],
    defaults=(None, None))
TensorInfo.__doc__ = """A package input or output: name, numpy dtype, shape (tuple of ints) and
tgc's element type name ("f32", "i64", "bf16", ...). bf16 crosses as its raw bits in uint16.
A bucketed package (`tgc compile --input-shape NAME=1..8x1..128`) takes inputs of any shape
from min_shape to shape, axis by axis; dim_symbols names each axis' symbol ("batch", "seq"; None for a fixed
axis), which has one value per run, and each output axis that follows a symbol comes back at
that value. In a single-shape package min_shape equals shape."""


class CompileResult(os.PathLike):
    """What tgc.compile wrote: `package` (its path; the object is path-like, so it can be passed
    to tgc.Session directly) and the statistics `tgc compile --stats` prints."""

    def __init__(self, stats):
        self.package = stats["package"]
        self.kernels = stats["kernels"]
        self.arena_bytes = stats["arena_bytes"]
        self.weight_bytes = stats["weight_bytes"]
        self.ops_before = stats["ops_before"]
        self.ops_after = stats["ops_after"]
        self.ops_after_by_kind = stats["ops_after_by_kind"]
        self.rule_hits = stats["rule_hits"]
        self.pass_seconds = stats["pass_seconds"]
        self.log = stats["log"]

    def __fspath__(self):
        return self.package

    def __str__(self):
        return self.package

    def __repr__(self):
        return (f"CompileResult(package={self.package!r}, kernels={self.kernels}, "
                f"arena_bytes={self.arena_bytes}, weight_bytes={self.weight_bytes})")


def _path(value, what):
    try:
        return os.fsdecode(os.fspath(value))
    except TypeError:
        raise Error(f"{what} must be a path (str or os.PathLike), not {type(value).__name__}") \
            from None


def compile(model, out_dir, target="cpu", precision="fp32", input_shapes=None, bind_inputs=None,
            cache_dir=None, disable_rules=(), dump_dir=None):
    """Compiles an ONNX model into a package directory and returns a CompileResult.

    model: a path (str / os.PathLike) or the model's bytes (written to a temporary file; a model
        with external data must be given as a path, so its data files are found beside it).
    out_dir: the package directory to write.
    target: "cpu" or "cuda:sm_90" / "cuda:sm_80" (CUDA packages compile with NVRTC, loaded at
        run time from the CUDA toolkit; no GPU is needed to compile).
    precision: "fp32", "fp16" or "bf16" (the last two CUDA only).
    input_shapes: {input name: tuple of dims} for inputs with symbolic dims. A dim is an int, or
        a range (min, max) or "min..max": then one bucketed package serves every shape in range
        (as `tgc compile --input-shape 'ids=1..8x1..128'`; Session.run takes any such shape).
    bind_inputs: {input name: ndarray or path of a TensorProto .pb}: the input becomes a constant.
    cache_dir: kernel cache folder; None: $TGC_CACHE_DIR or ~/.cache/tgc (as the CLI); "": none.
    disable_rules: rule labels that must not run. dump_dir: per-stage IR, kernels and plan.
    """
    out_dir = _path(out_dir, "out_dir")
    shapes = {}
    for name, dims in (input_shapes or {}).items():
        shapes[str(name)] = _dim_ranges(name, dims)
    tmp = None
    try:
        if isinstance(model, (bytes, bytearray, memoryview)):
            tmp = tempfile.mkdtemp(prefix="tgc-")
            model_path = os.path.join(tmp, "model.onnx")
            with open(model_path, "wb") as f:
                f.write(model)
        else:
            model_path = _path(model, "model")
        binds = {}
        for name, value in (bind_inputs or {}).items():
            if isinstance(value, (str, bytes, os.PathLike)):
                binds[str(name)] = _path(value, f"bind_inputs[{name!r}]")
                continue
            if tmp is None:
                tmp = tempfile.mkdtemp(prefix="tgc-")
            path = os.path.join(tmp, f"bound_{len(binds)}.pb")
            _tgc.write_tensor(path, str(name), np.ascontiguousarray(value))
            binds[str(name)] = path
        stats = _tgc.compile(model_path, out_dir, str(target), str(precision), shapes, binds,
                             None if cache_dir is None else _path(cache_dir, "cache_dir"),
                             [str(r) for r in disable_rules],
                             "" if dump_dir is None else _path(dump_dir, "dump_dir"))
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    return CompileResult(stats)


def _dim_ranges(name, dims):
    """input_shapes[name] as [(min, max)] per dim (an int d is (d, d))."""
    def one(d):
        if isinstance(d, str) and ".." in d:
            lo, hi = d.split("..", 1)
            return int(lo), int(hi)
        if isinstance(d, (tuple, list)):
            lo, hi = d
            return int(lo), int(hi)
        return int(d), int(d)
    try:
        if isinstance(dims, (str, int, np.integer)):
            dims = [dims]
        return [one(d) for d in dims]
    except (TypeError, ValueError):
        raise Error(f"input_shapes[{name!r}]: expected a tuple of ints or ranges (min, max) / "
                    f"'min..max', got {dims!r}") from None


class Session:
    """A loaded package (one arena). Session(package_dir, threads=0); threads <= 0: default.

    run({name: array}) or run([array, ...]) -> {output name: ndarray}. An input that is a
    C-contiguous ndarray in native byte order is read in place (no copy); another ndarray of the
    right dtype is copied once to C order; a non-array (list, scalar) is converted once to the
    input's dtype. An ndarray of another dtype is refused (tgc.Error), never cast. Outputs are new
    arrays the runtime writes into. Runs on one Session are serialized (the GIL is released
    while running, so different Sessions run in parallel)."""

    def __init__(self, package_dir, threads=0):
        self._s = _tgc.Session(_path(package_dir, "package_dir"), int(threads))
        self.path = os.fspath(package_dir)
        self.inputs = [TensorInfo(n, d, s, t, lo, sym) for n, t, d, s, lo, sym in
                       self._s.specs(False)]
        self.outputs = [TensorInfo(n, d, s, t, lo, sym) for n, t, d, s, lo, sym in
                        self._s.specs(True)]
        self.input_names = [i.name for i in self.inputs]
        self.output_names = [o.name for o in self.outputs]

    @property
    def precision(self):
        """The package's --precision: "fp32", "fp16" or "bf16"."""
        return self._s.precision()

    def describe(self):
        """Target, kernels and their steps, arena and weight bytes."""
        return self._s.describe()

    @property
    def max_seq(self):
        """A decode package's cache positions (prompt + new tokens <= max_seq); 0 otherwise."""
        return self._s.max_seq()

    def generate(self, prompt_ids, max_new_tokens, temperature=0.0, top_k=0, seed=0,
                 eos_id=None):
        """Generates with a decode package (`tgc compile --decode`): greedy (argmax, lowest id
        on ties) unless temperature > 0 (then sampled, among the top_k most likely ids when
        top_k > 0, seeded by `seed`); stops early after `eos_id` when given. Returns a dict:
        new_ids (list of ints), prefill_ms, prefill_tokens_per_s, decode_ms, decode_steps,
        decode_tokens_per_s. A prompt + max_new_tokens beyond max_seq, or any other package,
        raises tgc.Error."""
        try:
            ids = [int(i) for i in prompt_ids]
        except (TypeError, ValueError):
            raise Error(f"prompt_ids: expected a sequence of ints, got {prompt_ids!r}") from None
        return self._s.generate(ids, int(max_new_tokens), float(temperature), int(top_k),
                                int(seed), -1 if eos_id is None else int(eos_id))

    def run(self, inputs):
        names = self.input_names
        if isinstance(inputs, collections.abc.Mapping):
            known = set(names)
            for key in inputs:
                if key not in known:
                    raise Error(f"unknown input {key!r}; the package's inputs are "
                                f"{', '.join(map(repr, names)) or 'none'}")
            missing = [n for n in names if n not in inputs]
            if missing:
                raise Error(f"missing input {missing[0]!r}; the package's inputs are "
                            f"{', '.join(map(repr, names))}")
            values = [inputs[n] for n in names]
        elif isinstance(inputs, (list, tuple)):
            if len(inputs) != len(names):
                raise Error(f"expected {len(names)} inputs "
                            f"({', '.join(map(repr, names)) or 'none'}), got {len(inputs)}")
            values = list(inputs)
        elif isinstance(inputs, np.ndarray) and len(names) == 1:
            values = [inputs]
        else:
            raise Error("inputs must be a dict {name: array} or a list of arrays, not "
                        f"{type(inputs).__name__}")
        arrays = [_as_input(v, spec) for v, spec in zip(values, self.inputs)]
        return dict(zip(self.output_names, self._s.run(arrays)))

    def __repr__(self):
        return (f"tgc.Session({self.path!r}, inputs={self.input_names}, "
                f"outputs={self.output_names})")


def _as_input(value, spec):
    """The array handed to the runtime: `value` itself when it can be read in place."""
    if not isinstance(value, np.ndarray):
        try:
            return np.ascontiguousarray(np.asarray(value, dtype=spec.dtype))
        except (TypeError, ValueError) as e:
            raise Error(f"input {spec.name!r}: cannot convert {type(value).__name__} to "
                        f"{spec.tgc_dtype}: {e}") from None
    if not value.dtype.isnative:
        value = value.astype(value.dtype.newbyteorder("="))
    if not value.flags.c_contiguous:
        value = np.ascontiguousarray(value)
    return value
