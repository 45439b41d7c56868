#!/bin/bash
# cuda_device_check.sh — runs the CUDA packages in DIR on a GPU: checks every model's outputs
# against tests/data (rel-L2 <= 1e-4), then times each with `tgc bench`. Usage (repo root):
#   tools/cuda_device_check.sh TGC_BINARY PACKAGE_DIR
# PACKAGE_DIR holds one package per model, named like tests/data/models/<model>.
set -u
TGC=${1:-.carry/tgc}
PKGS=${2:-.carry/pkgs}
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader
echo "== ldd $TGC"; ldd "$TGC"
fail=0
echo "== compile on this machine (NVRTC here) the models with no package in $PKGS"
for m in tests/data/models/*/; do
  n=$(basename "$m")
  # Dynamic-axes and decode exports need --input-shape / --decode (tools/gpu_test runs them).
  [ -f "$m/shapes.json" ] || [ -f "$m/decode.json" ] && continue
  [ -d "$PKGS/$n" ] || "$TGC" compile "$m/model.onnx" -o "$PKGS/$n" --target=cuda:sm_90 2>&1 | tail -1
done
echo "== correctness (tgc run --tolerance 1e-4)"
for p in "$PKGS"/*/; do
  m=$(basename "$p")
  for set in 0 1; do
    out=$("$TGC" run "$p" --test-data tests/data/models/$m/test_data_set_$set --tolerance 1e-4 2>&1)
    rc=$?
    [ $rc -ne 0 ] && fail=1
    echo "$m set_$set rc=$rc: $(echo "$out" | tr '\n' ' ')"
  done
done
echo "== fallback GEMM kernel (TGC_NO_CUBLASLT=1) and eager launches (TGC_CUDA_GRAPH=0)"
for p in "$PKGS"/*/; do
  m=$(basename "$p")
  out=$(TGC_NO_CUBLASLT=1 "$TGC" run "$p" --test-data tests/data/models/$m/test_data_set_0 --tolerance 1e-4 2>&1 | head -1)
  echo "$m no-cublaslt: $out"
  out=$(TGC_CUDA_GRAPH=0 "$TGC" run "$p" --test-data tests/data/models/$m/test_data_set_0 --tolerance 1e-4 2>&1 | head -1)
  echo "$m no-graph: $out"
done
echo "== profile (per-step GPU time, eager launches with events)"
"$TGC" run "$PKGS/llama_tiny" --test-data tests/data/models/llama_tiny/test_data_set_0 --profile /tmp/prof.json 2>&1 | tail -13
echo "== inspect"
"$TGC" inspect "$PKGS/bert_tiny" | head -5
echo "== bench (median wall time per run: H2D inputs + graph launch + D2H outputs + sync)"
for p in "$PKGS"/*/; do
  m=$(basename "$p")
  launches=$("$TGC" inspect "$p" | grep -o 'launches per run: [0-9]*' | grep -o '[0-9]*$')
  echo "$m: launches/run=$launches $("$TGC" bench "$p" --test-data tests/data/models/$m/test_data_set_0 --iters 500 --warmup 50 2>&1)"
done
exit $fail
