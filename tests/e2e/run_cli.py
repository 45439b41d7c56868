#!/usr/bin/env python3
"""CLI contract tests: what scripts outside the project rely on (exit codes, messages, files).

Each check runs the real `tgc` binary. Prints PASS/FAIL per check and a last line
`cli: N passed, N failed`.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TGC = os.path.join(ROOT, "bazel-bin", "tools", "tgc")
MODELS = os.path.join(ROOT, "tests", "data", "models")
TMP = tempfile.mkdtemp(prefix="tgc-cli-")
results = []


def tgc(*args):
    return subprocess.run([TGC, *args], capture_output=True, text=True)


def check(name, cond, detail=""):
    results.append(cond)
    print(("PASS " if cond else "FAIL ") + name + ("" if cond else f": {detail[-600:]}"))


def model(name):
    return os.path.join(MODELS, name, "model.onnx")


def data(name, k=0):
    return os.path.join(MODELS, name, f"test_data_set_{k}")


# --help works and shows examples.
r = tgc("--help")
check("help", r.returncode == 0 and "Examples:" in r.stdout and "TGC_CUDA_GRAPH" in r.stdout,
      r.stdout + r.stderr)

# compile: exit 0 only when the package was written; stats JSON has the promised keys.
pkg, js = os.path.join(TMP, "bert.tgpkg"), os.path.join(TMP, "stats.json")
r = tgc("compile", model("bert_tiny"), "-o", pkg, "--stats", "--stats-json", js)
ok = r.returncode == 0 and os.path.exists(os.path.join(pkg, "plan.pb"))
check("compile writes package", ok, r.stderr)
try:
    s = json.load(open(js))
    keys = {"rules", "ops_before", "ops_after", "ops_after_by_kind", "kernels"}
    check("stats-json keys", keys <= set(s) and s["rules"].get("RecognizeScaledDotProductAttention") == 2
          and s["ops_after_by_kind"].get("tg.attention") == 2 and s["kernels"] > 0, json.dumps(s)[:400])
except Exception as e:  # noqa: BLE001
    check("stats-json keys", False, repr(e))
check("stats printed", "rules applied:" in r.stdout and "MergeParallelLinears" in r.stdout, r.stdout)

# run: rel_l2 line per output; exit 0 within tolerance, non-zero beyond it.
r = tgc("run", pkg, "--test-data", data("bert_tiny"))
check("run check passes", r.returncode == 0 and "rel_l2=" in r.stdout, r.stdout + r.stderr)
r = tgc("run", pkg, "--test-data", data("bert_tiny"), "--tolerance", "1e-12")
check("run check fails beyond tolerance", 0 < r.returncode < 128 and "rel_l2=" in r.stdout,
      r.stdout + r.stderr)

# inspect and bench.
r = tgc("inspect", pkg)
check("inspect", r.returncode == 0 and "arena" in r.stdout.lower() and "weight" in r.stdout.lower(),
      r.stdout)
r = tgc("bench", pkg, "--iters", "3", "--warmup", "1")
check("bench", r.returncode == 0 and "median latency" in r.stdout, r.stdout + r.stderr)
# A CPU session of two threads times each step's thread count at load and bench says what it
# chose; TGC_CPU_TUNE=0 keeps every step on all threads (runtime/CpuStepThreads.h).
r = tgc("bench", pkg, "--iters", "3", "--warmup", "1", "--threads", "2")
check("bench shows the step threads chosen at load", r.returncode == 0 and
      "step threads: " in r.stdout and "timed at load" in r.stdout, r.stdout + r.stderr)
r = subprocess.run([TGC, "bench", pkg, "--iters", "3", "--warmup", "1", "--threads", "2"],
                   capture_output=True, text=True, env={**os.environ, "TGC_CPU_TUNE": "0"})
check("TGC_CPU_TUNE=0 chooses no step threads", r.returncode == 0 and
      "median latency" in r.stdout and "step threads" not in r.stdout, r.stdout + r.stderr)
# --omit (where the time goes inside a CUDA graph) needs a GPU package: a clear refusal here.
r = tgc("bench", pkg, "--iters", "3", "--warmup", "1", "--omit", "gemm")
check("bench --omit refuses a CPU package", 0 < r.returncode < 128 and "--omit 'gemm'" in r.stderr
      and "GPU package" in r.stderr, r.stdout + r.stderr)

# inspect of a CUDA package works on any machine: the full description on a GPU, the validated
# plan without one; a damaged package is refused either way.
cpkg = os.path.join(TMP, "bert_cuda.tgpkg")
r = tgc("compile", model("bert_tiny"), "-o", cpkg, "--target=cuda:sm_90", "--precision=fp16")
check("compile CUDA package", r.returncode == 0, r.stderr)
r = tgc("inspect", cpkg)
check("inspect CUDA package", r.returncode == 0 and "gemm[" in r.stdout and "arena" in r.stdout.lower()
      and ("device: none usable here" in r.stdout or "gemm autotune" in r.stdout), r.stdout + r.stderr)
attn = [l for l in r.stdout.splitlines() if "_attention<<<" in l]
check("inspect marks the attention one block per SM", len(attn) == 2
      and all("one block per SM" in l for l in attn), "\n".join(attn) or r.stdout)
with open(os.path.join(cpkg, "weights.bin"), "r+b") as f:
    f.truncate(16)
r = tgc("inspect", cpkg)
check("inspect refuses a damaged CUDA package", 0 < r.returncode < 128 and "weights" in r.stderr
      and cpkg in r.stderr, r.stdout + r.stderr)

# --dump-dir: readable IR per stage, kernels and plan.
dump = os.path.join(TMP, "dump")
r = tgc("compile", model("bert_tiny"), "-o", os.path.join(TMP, "b2"), "--dump-dir", dump)
files = sorted(os.listdir(dump)) if os.path.isdir(dump) else []
first = open(os.path.join(dump, files[0])).read() if files else ""
check("dump-dir stages", r.returncode == 0 and files and files[0] == "00-import.mlir"
      and any("form-kernels" in f for f in files) and "kernels.cpp" in files
      and "plan.txt" in files and "elided" in first and len(first) < 200_000, str(files))

# --print-ir-after prints only the named pass.
r = tgc("compile", model("parallel_mlp"), "-o", os.path.join(TMP, "pm"),
        "--print-ir-after=tgc-batch-split-branches")
check("print-ir-after", r.returncode == 0 and "IR after tgc-batch-split-branches" in r.stderr
      and "IR after cse" not in r.stderr, r.stderr[:400])

# Rules can be switched off by name; unknown names are errors.
r = tgc("compile", model("bert_tiny"), "-o", os.path.join(TMP, "b3"), "--stats",
        "--disable-rules=MergeParallelLinears")
check("disable-rules", r.returncode == 0 and "MergeParallelLinears" not in r.stdout, r.stdout)
r = tgc("compile", model("bert_tiny"), "-o", os.path.join(TMP, "b4"), "--disable-rules=NoSuchRule")
check("unknown rule refused", 0 < r.returncode < 128 and "unknown rule 'NoSuchRule'" in r.stderr,
      r.stderr)

# Numerics debugging: check-each-pass names the pass, bisect names the rule (fault injected).
r = tgc("compile", model("parallel_mlp"), "-o", os.path.join(TMP, "pm2"), "--check-each-pass",
        "--inject-fault")
check("check-each-pass names pass", 0 < r.returncode < 128 and "'tgc-inject-fault'" in r.stderr,
      r.stderr[-400:])
r = tgc("bisect", model("parallel_mlp"), "--test-data", data("parallel_mlp"), "--inject-fault")
check("bisect names rule", r.returncode == 1 and "culprit rule 'InjectFaultScaleTanh'" in r.stdout,
      r.stdout + r.stderr)
r = tgc("bisect", model("parallel_mlp"), "--test-data", data("parallel_mlp"))
check("bisect clean model", r.returncode == 0 and "nothing to find" in r.stdout, r.stdout + r.stderr)
# The CUDA pipeline's rewrites (convolutions channels last) checked by the interpreter, no GPU
# needed; the rules fire on cnn_small (9 convolutions, every transpose but the input's gone).
r = tgc("bisect", model("cnn_small"), "--test-data", data("cnn_small"), "--target", "cuda:sm_90")
check("bisect cuda target", r.returncode == 0 and "nothing to find" in r.stdout, r.stdout + r.stderr)
r = tgc("bisect", model("cnn_small"), "--test-data", data("cnn_small"), "--target", "gpu")
check("bisect bad target", 0 < r.returncode < 128 and "gpu" in r.stderr, r.stderr)
dump = os.path.join(TMP, "cs_cuda_dump")
r = tgc("compile", model("cnn_small"), "-o", os.path.join(TMP, "cs_cuda"), "--target", "cuda:sm_90",
        "--stats", "--dump-dir", dump)
stages = sorted(f for f in os.listdir(dump) if f.endswith(".mlir")) if os.path.isdir(dump) else []
final = open(os.path.join(dump, stages[-1])).read() if stages else ""
check("cuda channels last", r.returncode == 0 and "ConvToChannelsLast: 9" in r.stdout
      and "CancelChannelsTransposes" in r.stdout and "SinkChannelsFirstBelowPool: 1" in r.stdout
      and final.count("tg.transpose") == 1 and final.count("nhwc") >= 9,
      r.stdout + r.stderr[-400:] + str(stages))

# Bad input: clear message, exit in 1..127, no crash.
bad = os.path.join(TMP, "garbage.onnx")
open(bad, "wb").write(b"\x08\x07garbage-not-a-model" * 10)
r = tgc("compile", bad, "-o", os.path.join(TMP, "x"))
check("garbage model refused", 0 < r.returncode < 128 and "garbage.onnx" in r.stderr, r.stderr)
r = tgc("compile", os.path.join(TMP, "missing.onnx"), "-o", os.path.join(TMP, "x"))
check("missing model refused", 0 < r.returncode < 128 and "missing.onnx" in r.stderr, r.stderr)
r = tgc("compile", model("bert_tiny"), "-o", os.path.join(TMP, "x"), "--input-shape", "input_0=1xq")
check("bad input-shape refused", 0 < r.returncode < 128 and "input-shape" in r.stderr, r.stderr)
r = tgc("compile", model("bert_tiny"), "-o", os.path.join(TMP, "x"), "--target=tpu")
check("bad target refused", 0 < r.returncode < 128 and "tpu" in r.stderr, r.stderr)
r = tgc("run", pkg, "--test-data", data("vit_tiny"))  # f32 image into an i64 ids model
check("wrong input refused", 0 < r.returncode < 128 and "input_0" in r.stderr, r.stderr)
# A token id outside the embedding table (bert_tiny's 1,000 rows): refused by `run`, naming the
# input, the element, the range and the Gather it indexes (the kernels would clamp it silently).
ids = onnx.TensorProto()
ids.ParseFromString(open(os.path.join(data("bert_tiny"), "input_0.pb"), "rb").read())
ids = numpy_helper.to_array(ids).copy()
ids[0, 0] = 5000
bad_ids = os.path.join(TMP, "bad_ids.pb")
open(bad_ids, "wb").write(numpy_helper.from_array(ids, "input_0").SerializeToString())
r = tgc("run", pkg, "--inputs", bad_ids)
check("out-of-range token id refused", 0 < r.returncode < 128 and
      "input 'input_0': element [0, 0] is 5000, outside [-1000, 999] (indices of Gather "
      "'/m/embeddings/word_embeddings/Gather')" in r.stderr, r.stderr)
# Without inputs, run and bench draw random ids inside the table (here 3 rows; [0, 10) before).
small = os.path.join(TMP, "small_table.onnx")
g = onnx.helper.make_graph(
    [onnx.helper.make_node("Gather", ["table", "ids"], ["rows"], name="lookup")], "small",
    [onnx.helper.make_tensor_value_info("ids", onnx.TensorProto.INT64, [4])],
    [onnx.helper.make_tensor_value_info("rows", onnx.TensorProto.FLOAT, [4, 2])],
    [numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(3, 2), "table")])
onnx.save(onnx.helper.make_model(g, opset_imports=[onnx.helper.make_opsetid("", 17)]), small)
spkg = os.path.join(TMP, "small.tgpkg")
r = tgc("compile", small, "-o", spkg)
r2 = tgc("run", spkg) if r.returncode == 0 else r
r3 = tgc("bench", spkg, "--iters", "3") if r.returncode == 0 else r
check("run and bench without inputs stay inside an index range",
      r.returncode == 0 and r2.returncode == 0 and r3.returncode == 0 and
      "in [-3, 2] (indices of Gather 'lookup')" in open(os.path.join(spkg, "plan.txt")).read(),
      r.stderr + r2.stderr + r3.stderr)
broken = os.path.join(TMP, "broken.tgpkg")
shutil.copytree(pkg, broken)
with open(os.path.join(broken, "plan.pb"), "r+b") as f:
    f.truncate(40)
r = tgc("run", broken, "--test-data", data("bert_tiny"))
check("truncated package refused", 0 < r.returncode < 128 and "plan" in r.stderr, r.stderr)

# tools/gpu_bundle: tgc and the CUTLASS plug-in, stripped, in one archive that runs unpacked.
bundle = os.path.join(TMP, "bundle", "tgc-gpu.tar.xz")
r = subprocess.run([os.path.join(ROOT, "tools", "gpu_bundle"), bundle], capture_output=True, text=True)
names = subprocess.run(["tar", "tJf", bundle], capture_output=True, text=True).stdout.split() \
    if r.returncode == 0 else []
ok = r.returncode == 0 and "tgc-gpu/tgc" in names and "tgc-gpu/libtgc_cutlass_sm90.so" in names
if ok:
    subprocess.run(["tar", "-C", os.path.dirname(bundle), "-xJf", bundle], check=True)
    h = subprocess.run([os.path.join(os.path.dirname(bundle), "tgc-gpu", "tgc"), "--help"],
                       capture_output=True, text=True)
    ok = h.returncode == 0 and "compile" in h.stdout
check("gpu_bundle packs a tgc that runs unpacked", ok, r.stdout + r.stderr)

# tools/bench/gpu_bench.py appends its table to the perf log under a dated heading naming the GPU
# (no torch needed for that part); an empty --log skips it.
sys.path.insert(0, os.path.join(ROOT, "tools", "bench"))
import gpu_bench  # noqa: E402
log = os.path.join(TMP, "perf-log.md")
open(log, "w").write("# log\n")
table = "| model | tgc |\n|---|---|\n| gpt2 | 257.4 |"
gpu_bench.append_log(log, table, "NVIDIA H100 80GB HBM3", "fp16", "python3 tools/bench/gpu_bench.py gpt2")
gpu_bench.append_log("", table, "x", "fp16", "")
text = open(log).read()
check("gpu_bench appends its table to the perf log",
      text.startswith("# log\n") and "### Harness run, " in text and
      ", NVIDIA H100 80GB HBM3, fp16\n`python3 tools/bench/gpu_bench.py gpt2`" in text and
      text.endswith("| gpt2 | 257.4 |\n") and text.count("### Harness run") == 1, text)

# gpu_bench's check at reduced precision: where PyTorch's own run misses the tolerance, tgc passes
# with an error no larger than PyTorch's ("PASS*"), and only then.
check("gpu_bench passes a row within PyTorch's own error only where PyTorch misses the tolerance",
      gpu_bench.tgc_within_torch({"rel_l2": 2.2e-2, "torch_rel_l2": 2.8e-2}, 1e-2)
      and not gpu_bench.tgc_within_torch({"rel_l2": 3.0e-2, "torch_rel_l2": 2.8e-2}, 1e-2)
      and not gpu_bench.tgc_within_torch({"rel_l2": 2.2e-2, "torch_rel_l2": 5e-3}, 1e-2))

# tools/bench/graph_timeline.py: per-node durations, gaps and increments of the replays of the
# graph launched most often (synthetic records: two replays of two kernels, one ordinary launch).
tsv = os.path.join(TMP, "timeline.tsv")
with open(tsv, "w") as f:
    f.write("1\t2\t10\t1000\t3000\ttgk_1_layer_norm\n1\t2\t11\t2500\t6000\tvoid cutlass::x\n"
            "3\t2\t10\t11000\t13000\ttgk_1_layer_norm\n3\t2\t11\t12500\t16000\tvoid cutlass::x\n"
            "4\t0\t0\t20000\t29000\ttgk_9_alone\n")
r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "bench", "graph_timeline.py"), tsv],
                   capture_output=True, text=True)
rows = [l.split() for l in r.stdout.splitlines() if l.strip().startswith("1 cutlass:gemm")]
check("graph_timeline increments", r.returncode == 0 and "2 replays, 2 kernels" in r.stdout
      and "tgk_9_alone" not in r.stdout and len(rows) == 1
      and rows[0][2:] == ["3.50", "-0.50", "3.00"], r.stdout + r.stderr)

# tools/bench/graph_timeline.cpp (the CUPTI injection library) builds where the CUDA toolkit is.
cuda = "/usr/local/cuda"
if os.path.exists(os.path.join(cuda, "include", "cupti.h")):
    lib = os.path.join(TMP, "graph_timeline.so")
    r = subprocess.run(["g++", "-O2", "-shared", "-fPIC", "-o", lib,
                        os.path.join(ROOT, "tools", "bench", "graph_timeline.cpp"),
                        "-I" + os.path.join(cuda, "include"), "-L" + os.path.join(cuda, "lib64"),
                        "-L" + os.path.join(os.path.realpath(cuda), "lib"), "-lcupti"],
                       capture_output=True, text=True)
    check("graph_timeline.so builds", r.returncode == 0 and os.path.exists(lib), r.stderr)

# --version: tgc's version, the commit it was built from, LLVM/MLIR and CUDA; exit 0.
r = tgc("--version")
check("--version", r.returncode == 0 and r.stdout.startswith("tgc 0.") and "(commit " in r.stdout
      and "LLVM/MLIR 15" in r.stdout and "CUDA 1" in r.stdout, r.stdout + r.stderr)

# Strict options: an input given twice, an unknown pass for --print-ir-after/-before, a CUDA
# architecture the backend does not generate for: refused with a message, nothing written.
strict = os.path.join(TMP, "strict.tgpkg")
r = tgc("compile", model("bert_tiny"), "-o", strict, "--input-shape", "input_ids=1x8",
        "--input-shape", "input_ids=1x16")
check("--input-shape twice refused", r.returncode == 1 and "'input_ids' twice" in r.stderr
      and not os.path.exists(strict), r.stderr)
for flag in ("--print-ir-after", "--print-ir-before"):
    r = tgc("compile", model("bert_tiny"), "-o", strict, flag + "=tgc-no-such-pass")
    check(flag + " unknown pass refused", r.returncode == 1 and "no pass 'tgc-no-such-pass'" in r.stderr
          and "tgc-form-kernels" in r.stderr and not os.path.exists(strict), r.stderr)
r = tgc("compile", model("bert_tiny"), "-o", strict, "--print-ir-before=form-kernels")
check("--print-ir-before prints", r.returncode == 0 and "IR before tgc-form-kernels" in r.stdout + r.stderr,
      r.stderr)
shutil.rmtree(strict, ignore_errors=True)
r = tgc("compile", model("bert_tiny"), "-o", strict, "--target=cuda:sm_75")
check("--target=cuda:sm_75 refused", r.returncode == 1 and "sm_90" in r.stderr and "sm_75" in r.stderr
      and not os.path.exists(strict), r.stderr)

# Atomic output: a compile that fails (here the host compiler) leaves nothing at -o or beside it,
# an older package at -o survives a failed compile untouched, and a retry to the same path works.
atom_dir = os.path.join(TMP, "atomic")
os.makedirs(atom_dir)
atom = os.path.join(atom_dir, "m.tgpkg")
env = dict(os.environ, TGC_CXX="c++ -include /nonexistent/tgc-missing-header.h")
r = subprocess.run([TGC, "compile", model("parallel_mlp"), "-o", atom, "--no-cache"], env=env,
                   capture_output=True, text=True)
check("failed compile leaves nothing", r.returncode == 1 and os.listdir(atom_dir) == []
      and "tgc-missing-header.h" in r.stderr and r.stderr.count("\n") < 12, r.stderr)
r = tgc("compile", model("parallel_mlp"), "-o", atom)
before = open(os.path.join(atom, "plan.pb"), "rb").read() if r.returncode == 0 else b""
check("retry after a failed compile", r.returncode == 0 and os.listdir(atom_dir) == ["m.tgpkg"], r.stderr)
r = subprocess.run([TGC, "compile", model("bert_tiny"), "-o", atom, "--no-cache"], env=env,
                   capture_output=True, text=True)
check("failed compile keeps the older package", r.returncode == 1 and os.listdir(atom_dir) == ["m.tgpkg"]
      and open(os.path.join(atom, "plan.pb"), "rb").read() == before, r.stderr)
# A staging directory left by a killed compile (its process gone) is swept by the next compile.
# (Only once its process is gone and nothing wrote to it for ten minutes: a fresh one stays.)
stale = os.path.join(atom_dir, ".m.tgpkg.tgc-tmp-999999999-abcdef")
fresh = os.path.join(atom_dir, ".m.tgpkg.tgc-tmp-999999998-abcdef")
os.makedirs(stale)
os.makedirs(fresh)
os.utime(stale, (1e9, 1e9))
r = tgc("compile", model("parallel_mlp"), "-o", atom)
check("stale staging directory swept", r.returncode == 0 and
      sorted(os.listdir(atom_dir)) == [".m.tgpkg.tgc-tmp-999999998-abcdef", "m.tgpkg"],
      str(os.listdir(atom_dir)))
shutil.rmtree(fresh)
# A package moved aside by a publish that was killed between its renames comes back.
shutil.move(atom, os.path.join(atom_dir, ".m.tgpkg.tgc-old-999999999"))
os.utime(os.path.join(atom_dir, ".m.tgpkg.tgc-old-999999999"), (1e9, 1e9))
r = tgc("compile", model("bert_tiny"), "-o", os.path.join(atom_dir, "other.tgpkg"))
r2 = tgc("inspect", atom) if r.returncode == 0 else r
env_fail = dict(os.environ, TGC_CXX="c++ -include /nonexistent/tgc-missing-header.h")
r3 = subprocess.run([TGC, "compile", model("parallel_mlp"), "-o", atom, "--no-cache"], env=env_fail,
                    capture_output=True, text=True)
check("a package moved aside by a killed publish is put back", r3.returncode == 1 and
      os.path.exists(os.path.join(atom, "plan.pb")) and
      not any(n.startswith(".m.tgpkg.tgc-old") for n in os.listdir(atom_dir)), str(os.listdir(atom_dir)))
# -o with a trailing slash; a symbolic link at -o is refused and its target left alone.
r = tgc("compile", model("parallel_mlp"), "-o", atom + "/")
check("-o with a trailing slash", r.returncode == 0 and os.path.exists(os.path.join(atom, "plan.pb"))
      and sorted(os.listdir(atom_dir)) == ["m.tgpkg", "other.tgpkg"], r.stderr + str(os.listdir(atom_dir)))
# A relative -o is staged beside the package (its parent made from the working directory), not
# under /tmp, where that relative parent does not exist (a Bazel action's bazel-out/... path).
rel_parent = "rel-%d/deeper" % os.getpid()
r = subprocess.run([TGC, "compile", model("parallel_mlp"), "-o", rel_parent + "/m.tgpkg"], cwd=atom_dir,
                   capture_output=True, text=True)
check("relative -o whose parent exists only here", r.returncode == 0 and
      os.path.exists(os.path.join(atom_dir, rel_parent, "m.tgpkg", "plan.pb")) and
      not os.path.exists(os.path.join(tempfile.gettempdir(), rel_parent)), r.stderr)
shutil.rmtree(os.path.join(atom_dir, rel_parent.split("/")[0]))
link = os.path.join(atom_dir, "link.tgpkg")
os.symlink(atom, link)
r = tgc("compile", model("parallel_mlp"), "-o", link)
check("a symbolic link at -o is refused", r.returncode == 1 and "symbolic link" in r.stderr and
      os.path.islink(link) and os.path.exists(os.path.join(atom, "plan.pb")), r.stderr)

# JSON stays valid with a tab, quotes, a backslash and a newline in a node name (llvm::json).
m = onnx.load(model("parallel_mlp"))
next(n for n in m.graph.node if n.name == "/l1.0/Gemm").name = 'tab\there "quoted" back\\slash\nnext'
odd = os.path.join(TMP, "odd.onnx")
onnx.save(m, odd)
oddpkg, oddjs, oddtrace = (os.path.join(TMP, n) for n in ("odd.tgpkg", "odd.json", "odd_trace.json"))
r = tgc("compile", odd, "-o", oddpkg, "--stats-json", oddjs)
r2 = tgc("run", oddpkg, "--test-data", data("parallel_mlp"), "--profile", oddtrace)
try:
    trace = json.load(open(oddtrace))
    labels = " ".join(e["args"]["ops"] for e in trace["traceEvents"])
    check("JSON with odd names", r.returncode == 0 and r2.returncode == 0 and "rules" in json.load(open(oddjs))
          and "tab%09here %22quoted%22 back%5Cslash%0Anext" in labels, labels[:300])
except Exception as e:  # noqa: BLE001
    check("JSON with odd names", False, repr(e) + r.stderr + r2.stderr)

# tools/check_layers.py finds an include and a Bazel dep that point up (a negative case).
fake = os.path.join(TMP, "layers")
os.makedirs(os.path.join(fake, "runtime"))
os.makedirs(os.path.join(fake, "codegen"))
open(os.path.join(fake, "runtime", "Up.cpp"), "w").write('#include "driver/Compile.h"\n#include "runtime/Ok.h"\n')
open(os.path.join(fake, "runtime", "BUILD"), "w").write('cc_library(name = "x", deps = ["//codegen/cpu"])\n')
open(os.path.join(fake, "codegen", "Down.cpp"), "w").write('#include "runtime/Text.h"\n')
r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "check_layers.py"), fake],
                   capture_output=True, text=True)
check("check_layers finds upward includes and deps", r.returncode == 1 and
      "runtime/Up.cpp (runtime) includes driver/Compile.h" in r.stdout and
      "runtime/BUILD (runtime) depends on codegen" in r.stdout and
      r.stdout.strip().endswith("layers: 1 passed, 2 failed"), r.stdout)

# tgc ops: the support table (docs/ops.md is generated from it).
r = tgc("ops")
check("tgc ops lists the importer's ops with their notes", r.returncode == 0 and
      "| Resize | yes | yes | opset 11+" in r.stdout
      and "| MaxPool | yes | yes | all attributes; the Indices" in r.stdout
      and "| QuantizeLinear |" in r.stdout, r.stdout[-400:] + r.stderr)

# --bind-input: a shape-deciding graph input (ReduceSum's axes) bound at compile time.
from onnx import helper, TensorProto  # noqa: E402
bdir = os.path.join(TMP, "bind")
os.makedirs(os.path.join(bdir, "set"))
g = helper.make_graph(
    [helper.make_node("ReduceSum", ["data", "axes"], ["y"], keepdims=0)], "g",
    [helper.make_tensor_value_info("data", TensorProto.FLOAT, [2, 3, 4]),
     helper.make_tensor_value_info("axes", TensorProto.INT64, [1])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])])
bm = os.path.join(bdir, "model.onnx")
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]), bm)
x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
for k, (arr, nm) in enumerate([(x, "data"), (np.array([1], np.int64), "axes")]):
    open(os.path.join(bdir, "set", f"input_{k}.pb"), "wb").write(
        numpy_helper.from_array(arr, nm).SerializeToString())
open(os.path.join(bdir, "set", "output_0.pb"), "wb").write(
    numpy_helper.from_array(x.sum(axis=1), "y").SerializeToString())
axes_pb = os.path.join(bdir, "set", "input_1.pb")
bpkg = os.path.join(bdir, "pkg")
r = tgc("compile", bm, "-o", bpkg)
check("unbound axes input refused with the --bind-input hint", r.returncode == 1 and
      "axes input must be constant (graph input 'axes': bind its value at compile time with "
      "--bind-input axes=FILE.pb)" in r.stderr, r.stderr)
r = tgc("compile", bm, "-o", bpkg, "--bind-input", "axes=" + axes_pb)
r2 = tgc("run", bpkg, "--test-data", os.path.join(bdir, "set"))
check("--bind-input compiles; run takes the remaining inputs by name",
      r.returncode == 0 and r2.returncode == 0 and "PASS" in r2.stdout, r.stderr + r2.stdout + r2.stderr)
r = tgc("compile", bm, "-o", bpkg, "--bind-input", "nope=" + axes_pb)
check("--bind-input of a name that is no graph input refused",
      r.returncode == 1 and "--bind-input names 'nope', which is not a graph input" in r.stderr, r.stderr)
r = tgc("compile", bm, "-o", bpkg, "--bind-input", "axes=" + os.path.join(bdir, "set", "input_0.pb"))
check("--bind-input of a value of another type refused", r.returncode == 1 and
      "--bind-input axes: the value's dtype or shape does not match" in r.stderr, r.stderr)
r = tgc("compile", bm, "-o", bpkg, "--bind-input", "axes")
check("--bind-input without a file refused", r.returncode == 1 and "is not NAME=FILE.pb" in r.stderr,
      r.stderr)

# A shape input computed from a graph input (ReduceSum's axes = a + b): the refusal names the
# graph inputs it depends on, and binding them folds the computation.
g = helper.make_graph(
    [helper.make_node("Add", ["a", "b"], ["axes"]),
     helper.make_node("ReduceSum", ["data", "axes"], ["y"], keepdims=0)], "g",
    [helper.make_tensor_value_info("data", TensorProto.FLOAT, [2, 3, 4]),
     helper.make_tensor_value_info("a", TensorProto.INT64, [1])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
    [numpy_helper.from_array(np.array([0], np.int64), "b")])
cm = os.path.join(bdir, "computed.onnx")
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]), cm)
a_pb = os.path.join(bdir, "a.pb")
open(a_pb, "wb").write(numpy_helper.from_array(np.array([1], np.int64), "a").SerializeToString())
r = tgc("compile", cm, "-o", bpkg)
check("a shape input computed from a graph input: the refusal names that input", r.returncode == 1
      and "axes input must be constant (it is computed from graph input 'a': bind its value at "
      "compile time with --bind-input a=FILE.pb)" in r.stderr, r.stderr)
r = tgc("compile", cm, "-o", bpkg, "--bind-input", "a=" + a_pb)
r2 = tgc("run", bpkg, "--input", "data=@" + os.path.join(bdir, "set", "input_0.pb"),
         "--output-dir", os.path.join(bdir, "computed_out"))
got = np.load(os.path.join(bdir, "computed_out", "y.npy")) if r2.returncode == 0 else None
check("binding that input folds the computed axes", r.returncode == 0 and got is not None and
      np.array_equal(got, x.sum(axis=1)), r.stderr + r2.stderr)

# CPU targets (issue 26): `cpu` is the compiling machine's best x86-64 level, recorded in the
# package; levels and `native` explicit; an unknown level refused with the choices.
r = tgc("compile", model("parallel_mlp"), "-o", os.path.join(TMP, "lvl_host"), "--target", "cpu")
ri = tgc("inspect", os.path.join(TMP, "lvl_host"))
check("--target=cpu records the host's x86-64 level", r.returncode == 0 and
      re.search(r"target:\s+cpu:x86-64(-v[234])?\n", ri.stdout) is not None, r.stderr + ri.stdout)
for t in ("cpu:x86-64-v2", "cpu:native"):
    d = os.path.join(TMP, "lvl_" + t.replace(":", "_"))
    r = tgc("compile", model("parallel_mlp"), "-o", d, "--target", t)
    r2 = tgc("run", d, "--test-data", data("parallel_mlp"))
    ri = tgc("inspect", d)
    check(f"--target={t} compiles, runs here and is recorded", r.returncode == 0 and
          r2.returncode == 0 and f"target:       {t}" in ri.stdout, r.stderr + r2.stderr + ri.stdout)
r = tgc("compile", model("parallel_mlp"), "-o", os.path.join(TMP, "lvl_bad"), "--target",
        "cpu:x86-64-v9")
check("an unknown CPU level is refused with the choices", r.returncode == 1 and
      "unknown CPU target 'cpu:x86-64-v9' (use cpu, cpu:x86-64, cpu:x86-64-v2, cpu:x86-64-v3, "
      "cpu:x86-64-v4, cpu:native)" in r.stderr, r.stderr)

# --- CLI conveniences (issue 27) ---------------------------------------------------------------
import pty  # noqa: E402
import select  # noqa: E402
import xml.etree.ElementTree as ET  # noqa: E402


def pb_array(path):
    t = onnx.TensorProto()
    t.ParseFromString(open(path, "rb").read())
    return numpy_helper.to_array(t)


def rel_l2(got, want):
    return float(np.linalg.norm(got.astype(np.float64) - want) / max(np.linalg.norm(want), 1e-30))


# --input NAME=@file.npy and --output-dir: bert_tiny's test data as .npy in, .npy out.
npy = os.path.join(TMP, "npy")
os.makedirs(npy)
ids_npy = os.path.join(npy, "ids.npy")
np.save(ids_npy, pb_array(os.path.join(data("bert_tiny"), "input_0.pb")))
want = pb_array(os.path.join(data("bert_tiny"), "output_0.pb"))
outd = os.path.join(npy, "out")
r = tgc("run", pkg, "--input", "input_0=@" + ids_npy, "--output-dir", outd)
got = np.load(os.path.join(outd, "output_0.npy")) if os.path.exists(os.path.join(outd, "output_0.npy")) else None
check("run --input @npy --output-dir round trip", r.returncode == 0 and got is not None
      and got.shape == want.shape and got.dtype == np.float32 and rel_l2(got, want) <= 1e-5,
      r.stdout + r.stderr + str(os.listdir(outd) if os.path.isdir(outd) else ""))
r = tgc("run", pkg, "--input", "input_0=@" + os.path.join(data("bert_tiny"), "input_0.pb"),
        "--output-dir", os.path.join(npy, "out_pb"))
got = np.load(os.path.join(npy, "out_pb", "output_0.npy")) if r.returncode == 0 else None
check("run --input @pb", r.returncode == 0 and got is not None and rel_l2(got, want) <= 1e-5,
      r.stdout + r.stderr)

# Bad .npy files: exit 1 and a message naming the file (or the input) and what is wrong.
ids = pb_array(os.path.join(data("bert_tiny"), "input_0.pb"))
cases = {}
trunc = os.path.join(npy, "truncated.npy")
open(trunc, "wb").write(open(ids_npy, "rb").read()[:-8])
cases["truncated"] = (trunc, "truncated.npy", "truncated")
fort = os.path.join(npy, "fortran.npy")
np.save(fort, np.asfortranarray(np.stack([ids[0], ids[0]], axis=1)))
cases["fortran order"] = (fort, "fortran.npy", "fortran_order")
big = os.path.join(npy, "bigendian.npy")
np.save(big, ids.astype(">i8"))
cases["big-endian"] = (big, "bigendian.npy", "big-endian")
objs = os.path.join(npy, "objects.npy")
np.save(objs, np.array([{"a": 1}], dtype=object), allow_pickle=True)
cases["object dtype"] = (objs, "objects.npy", "Python objects")
wrong = os.path.join(npy, "wrong_dtype.npy")
np.save(wrong, ids.astype(np.float32))
cases["wrong dtype"] = (wrong, "wrong_dtype.npy", "the package expects i64 [1, 32]")
for what, (path, name, words) in cases.items():
    r = tgc("run", pkg, "--input", "input_0=@" + path)
    check("bad npy refused: " + what, r.returncode == 1 and name in r.stderr and words in r.stderr
          and "Traceback" not in r.stderr, r.stderr)

# A model with two inputs and hostile names (markup, quotes, &, a newline, a backslash).
HOSTILE = 'x<script>alert("1&amp;2")</script>\n\\ \'q\''
hx, hy, ho = HOSTILE + "#in0", HOSTILE + "#in1", HOSTILE + "#out"
hg = helper.make_graph(
    [helper.make_node("MatMul", [hx, "w"], ["t1"], name=HOSTILE + "#mm"),
     helper.make_node("Relu", ["t1"], ["t2"], name=HOSTILE + "#relu"),
     helper.make_node("Add", ["t2", hy], ["t3"], name=HOSTILE + "#add"),
     helper.make_node("Softmax", ["t3"], [ho], name=HOSTILE + "#softmax", axis=-1)], "hostile",
    [helper.make_tensor_value_info(hx, TensorProto.FLOAT, [4, 8]),
     helper.make_tensor_value_info(hy, TensorProto.FLOAT, [4, 16])],
    [helper.make_tensor_value_info(ho, TensorProto.FLOAT, [4, 16])],
    [numpy_helper.from_array(np.linspace(-1, 1, 128, dtype=np.float32).reshape(8, 16), "w")])
hdir = os.path.join(TMP, "hostile")
os.makedirs(hdir)
hm = os.path.join(hdir, "model.onnx")
onnx.save(helper.make_model(hg, opset_imports=[helper.make_opsetid("", 17)]), hm)
hpkg, hdump = os.path.join(hdir, "pkg"), os.path.join(hdir, "dump")
r = tgc("compile", hm, "-o", hpkg, "--dump-dir", hdump)
check("hostile-name model compiles with --dump-dir", r.returncode == 0, r.stderr)
hx_npy = os.path.join(hdir, "x.npy")
np.save(hx_npy, np.ones((4, 8), np.float32))
r = tgc("run", hpkg, "--input", hx + "=@" + hx_npy)
check("missing input named with its dtype and shape", r.returncode == 1 and
      "no value for input 'x<script>alert(%221&amp;2%22)</script>%0A%5C 'q'#in1' (f32 [4, 16])"
      in r.stderr, r.stderr)
r = tgc("bench", pkg, "--iters", "3", "--input", "nope=@" + ids_npy)
check("bench --input of an unknown name refused", r.returncode == 1 and "'nope'" in r.stderr
      and "'input_0'" in r.stderr, r.stderr)

# bench --json: the promised keys, ordered percentiles; the human output prints them too.
bj = os.path.join(TMP, "bench.json")
r = tgc("bench", pkg, "--iterations", "20", "--warmup", "2", "--json", bj)
try:
    b = json.load(open(bj))
    keys = {"p50_us", "p90_us", "p99_us", "mean_us", "stddev_us", "min_us", "max_us", "iterations",
            "warmup", "target"}
    check("bench --json keys and p50 <= p90 <= p99", r.returncode == 0 and keys <= set(b)
          and b["min_us"] <= b["p50_us"] <= b["p90_us"] <= b["p99_us"] <= b["max_us"]
          and b["iterations"] == 20 and b["warmup"] == 2 and b["target"].startswith("cpu:x86-64")
          and "p50 " in r.stdout and "p99 " in r.stdout, json.dumps(b) + r.stdout)
except Exception as e:  # noqa: BLE001
    check("bench --json keys and p50 <= p90 <= p99", False, repr(e) + r.stdout + r.stderr)

# --dump-dir: graph.dot and graph.svg (well-formed XML naming the kernels), hostile names too.
for label, d in (("bert_tiny", dump), ("hostile names", hdump)):
    dotf, svgf = os.path.join(d, "graph.dot"), os.path.join(d, "graph.svg")
    try:
        root = ET.parse(svgf).getroot()
        text = " ".join(t for t in root.itertext())
        ok = os.path.exists(dotf) and "tgk_0_" in text and "digraph" in open(dotf).read()
        if label == "hostile names":
            ok = ok and "<script" not in open(svgf).read() and "%0A" in text
    except Exception as e:  # noqa: BLE001
        ok, text = False, repr(e)
    check("graph.dot and graph.svg (%s)" % label, ok, text[:400])
# Without Graphviz on PATH: graph.dot, one note, success (kernels from the cache: no compiler).
nodot = os.path.join(TMP, "nodot_bin")
os.makedirs(nodot)
cache = os.path.join(TMP, "cache")
cxx = dict(os.environ, TGC_CXX="c++")  # the compiler is part of the cache key
subprocess.run([TGC, "compile", model("parallel_mlp"), "-o", os.path.join(TMP, "nd1"), "--cache-dir",
                cache], capture_output=True, env=cxx)
r = subprocess.run([TGC, "compile", model("parallel_mlp"), "-o", os.path.join(TMP, "nd2"),
                    "--cache-dir", cache, "--dump-dir", os.path.join(TMP, "nd_dump")],
                   capture_output=True, text=True, env=dict(cxx, PATH=nodot))
check("no Graphviz: graph.dot, a note, exit 0", r.returncode == 0 and
      os.path.exists(os.path.join(TMP, "nd_dump", "graph.dot")) and
      not os.path.exists(os.path.join(TMP, "nd_dump", "graph.svg")) and
      r.stderr.count("graph.svg skipped") == 1 and "dot" in r.stderr, r.stderr)

# run --profile report.html: self-contained, a bar per kernel, the graph, hostile text escaped.
html = os.path.join(hdir, "report.html")
hy_npy = os.path.join(hdir, "y.npy")
np.save(hy_npy, np.ones((4, 16), np.float32))
r = tgc("run", hpkg, "--input", hx + "=@" + hx_npy, "--input", hy + "=@" + hy_npy, "--profile", html)
steps = int(open(os.path.join(hpkg, "plan.txt")).read().split("steps: ")[1].split()[0]) \
    if os.path.exists(os.path.join(hpkg, "plan.txt")) else -1
page = open(html).read() if os.path.exists(html) else ""
check("run --profile report.html", r.returncode == 0 and page.count('class="bar"') == steps > 0
      and "<svg" in page and "Total:" in page and "<script" not in page and "src=" not in page
      and "http://" not in page.replace("http://www.w3.org", ""), r.stderr + page[:300])
# The report lists the rules applied, as `compile --stats-json` counts them (the plan records them).
rpkg, rstats, rhtml = (os.path.join(TMP, n) for n in ("rules.tgpkg", "rules.json", "rules.html"))
r = tgc("compile", model("bert_tiny"), "-o", rpkg, "--stats-json", rstats)
r2 = tgc("run", rpkg, "--test-data", data("bert_tiny"), "--profile", rhtml)
rules = json.load(open(rstats))["rules"] if r.returncode == 0 else {}
page = open(rhtml).read() if os.path.exists(rhtml) else ""
check("run --profile report.html lists the rules applied", r2.returncode == 0 and len(rules) > 0 and
      all('<td class="sym">%s</td><td class="num">%d</td>' % (k, v) in page for k, v in rules.items()),
      str(rules) + page[-600:])
r = tgc("run", pkg, "--test-data", data("bert_tiny"), "--profile", os.path.join(TMP, "trace.json"))
check("run --profile trace.json stays a Chrome trace", r.returncode == 0 and
      "traceEvents" in json.load(open(os.path.join(TMP, "trace.json"))), r.stderr)

# A data-dependent output shape (NonZero): --output-dir writes the run's actual shape (the bound
# is [2, 6]), and --test-data compares against it.
dyn = os.path.join(TMP, "nonzero")
os.makedirs(os.path.join(dyn, "test_data_set_0"), exist_ok=True)
g = helper.make_graph([helper.make_node("NonZero", ["x"], ["y"], name="nz")], "nz",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                      [helper.make_tensor_value_info("y", TensorProto.INT64, None)])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]),
          os.path.join(dyn, "model.onnx"))
xv = np.array([[0, 1, 0], [2, 0, 3]], np.float32)
for name, arr in (("input_0", xv), ("output_0", np.array(np.nonzero(xv), np.int64))):
    with open(os.path.join(dyn, "test_data_set_0", name + ".pb"), "wb") as f:
        f.write(numpy_helper.from_array(arr, "x" if name == "input_0" else "y").SerializeToString())
r = tgc("compile", os.path.join(dyn, "model.onnx"), "-o", os.path.join(dyn, "p.tgpkg"))
outd = os.path.join(dyn, "out")
r2 = tgc("run", os.path.join(dyn, "p.tgpkg"), "--test-data", os.path.join(dyn, "test_data_set_0"),
         "--output-dir", outd) if r.returncode == 0 else r
got = np.load(os.path.join(outd, "y.npy")) if r2.returncode == 0 else None
check("run --output-dir writes a data-dependent output at its actual shape",
      got is not None and got.shape == (2, 3) and got.tolist() == [[0, 1, 1], [1, 0, 2]]
      and "[2, 3]" in r2.stdout and "PASS" in r2.stdout, r.stderr + r2.stdout + r2.stderr)

# Progress: never on a pipe; on a terminal, `[k/N] stage ...` rewritten with \r and cleared.
r = tgc("compile", model("bert_tiny"), "-o", os.path.join(TMP, "p1"), "--no-cache")
check("no progress line when stderr is a pipe", r.returncode == 0 and "\r" not in r.stderr
      and "[1/" not in r.stderr and "/2" not in r.stderr, repr(r.stderr[:300]))
# A compile made slow on purpose (a host compiler that waits 2 s first): an unloaded machine
# compiles bert_tiny in under the second after which the line appears.
slow_cxx = os.path.join(TMP, "slow-cxx")
with open(slow_cxx, "w") as f:
    f.write('#!/bin/sh\nsleep 2\nexec %s "$@"\n' % (shutil.which("clang++") or "c++"))
os.chmod(slow_cxx, 0o755)
master, slave = pty.openpty()
p = subprocess.Popen([TGC, "compile", model("bert_tiny"), "-o", os.path.join(TMP, "p2"), "--no-cache"],
                     stdout=subprocess.PIPE, stderr=slave, env=dict(os.environ, TGC_CXX=slow_cxx))
os.close(slave)
seen = b""
while True:
    ready, _, _ = select.select([master], [], [], 0.2)
    if ready:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    elif p.poll() is not None:
        break
p.wait()
os.close(master)
check("progress line on a terminal (slow compile)", p.returncode == 0 and seen.startswith(b"\r[")
      and b"codegen, host C++ compiler" in seen and seen.endswith(b"\r"), repr(seen[:300]))

# A bucketed package (issue 28): inspect lists symbols and buckets, bench --shape times any shape
# in range (the largest bucket by default) and refuses one outside it, run takes test data and
# --input files of any in-range shape.
bpkg = os.path.join(TMP, "bucketed.tgpkg")
r = tgc("compile", model("bert_tiny_dyn"), "-o", bpkg, "--input-shape", "input_0=1..2x1..16")
check("bucketed compile", r.returncode == 0 and os.path.exists(os.path.join(bpkg, "plan.pb")),
      r.stderr)
r = tgc("inspect", bpkg)
check("inspect lists symbols, ranges and buckets with one shared arena", r.returncode == 0
      and "symbols:      batch 1..2 seq 1..16" in r.stdout
      and "'input_0' i64 [batch 1..2, seq 1..16]" in r.stdout
      and "bytes, allocated once: the largest bucket's, shared by every bucket" in r.stdout
      and re.search(r"bucket 0: batch=1 seq=16, arena \d+ bytes, \d+ steps", r.stdout) is not None,
      r.stdout[:1500] + r.stderr)
r = tgc("bench", bpkg, "--shape", "input_0=2x5", "--iters", "3", "--warmup", "1")
check("bench --shape in range", r.returncode == 0 and "inputs: input_0 [2, 5]" in r.stdout
      and "median latency" in r.stdout, r.stdout + r.stderr)
r = tgc("bench", bpkg, "--iters", "2", "--warmup", "0")
check("bench defaults to the largest bucket", r.returncode == 0
      and "inputs: input_0 [2, 16]" in r.stdout, r.stdout + r.stderr)
r = tgc("bench", bpkg, "--shape", "input_0=3x5", "--iters", "2")
check("bench --shape out of range refused with the range", r.returncode == 1
      and "input 'input_0' takes i64 [1..2, 1..16]" in r.stderr, r.stderr)
r = tgc("run", bpkg, "--test-data", data("bert_tiny_dyn", 0))  # 1x7: padded into a bucket
check("run --test-data of an in-range shape checks its outputs", r.returncode == 0
      and "[1, 7, 128]" in r.stdout and "PASS" in r.stdout, r.stdout + r.stderr)
ids = pb_array(os.path.join(data("bert_tiny_dyn", 0), "input_0.pb"))
npy = os.path.join(TMP, "ids_1x7.npy")
np.save(npy, ids)
r = tgc("run", bpkg, "--input", "input_0=@" + npy)
check("run --input of an in-range shape", r.returncode == 0 and "[1, 7, 128]" in r.stdout,
      r.stdout + r.stderr)
np.save(npy, np.zeros((1, 17), np.int64))
r = tgc("run", bpkg, "--input", "input_0=@" + npy)
check("run --input out of range refused with the range", r.returncode == 1
      and "the package expects i64 [1..2, 1..16]" in r.stderr, r.stderr)

# `tgc generate` (issue 29) refuses any package but a decode package, and a bad --prompt-ids
# (decode packages themselves: tests/e2e/run_generate.py).
r = tgc("generate", bpkg, "--prompt-ids", "1,2,3", "--max-new-tokens", "4")
check("generate refuses a package that is not a decode package", r.returncode == 1
      and "is not a decode package" in r.stderr and "--decode" in r.stderr, r.stderr)
r = tgc("generate", bpkg, "--prompt-ids", "1,x", "--max-new-tokens", "4")
check("generate refuses a bad --prompt-ids", r.returncode == 1
      and "--prompt-ids: 'x' is not an integer" in r.stderr, r.stderr)

shutil.rmtree(TMP, ignore_errors=True)
print(f"cli: {sum(results)} passed, {len(results) - sum(results)} failed")
sys.exit(0 if all(results) else 1)
