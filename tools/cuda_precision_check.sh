#!/bin/bash
# cuda_precision_check.sh — on a GPU: every model's CUDA package at fp32 (tolerance 1e-4) and at
# fp16/bf16 (1e-2) against tests/data on both test sets, the fp16/bf16 fallback GEMM kernels
# (TGC_NO_CUBLASLT=1), then `tgc bench` at fp32 and fp16. Usage (repo root):
#   tools/cuda_precision_check.sh TGC_BINARY PACKAGE_ROOT   # PACKAGE_ROOT/{fp32,fp16,bf16}/<model>
# Models without a package are compiled here (--target=cuda:sm_90 --precision=P).
set -u
TGC=${1:-.carry/tgc}
ROOT=${2:-.carry/pkgs}
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader
fail=0
echo "== compile (here, 8 at a time) the packages missing under $ROOT"
for prec in fp32 fp16 bf16; do
  for m in tests/data/models/*/; do
    n=$(basename "$m")
    # Dynamic-axes and decode exports need --input-shape / --decode (tools/gpu_test runs them).
    [ -f "$m/shapes.json" ] || [ -f "$m/decode.json" ] && continue
    [ -d "$ROOT/$prec/$n" ] || echo "$m/model.onnx $ROOT/$prec/$n $prec"
  done
done | xargs -P 8 -L 1 sh -c '"$0" compile "$1" -o "$2" --target=cuda:sm_90 --precision=$3 --no-cache 2>&1 | grep -i error' "$TGC"
for prec in fp32 fp16 bf16; do
  tol=1e-2; [ $prec = fp32 ] && tol=1e-4
  echo "== $prec: tgc run --tolerance $tol"
  for m in tests/data/models/*/; do
    n=$(basename "$m"); p="$ROOT/$prec/$n"
    [ -f "$m/shapes.json" ] || [ -f "$m/decode.json" ] && continue
    [ -d "$p" ] || "$TGC" compile "$m/model.onnx" -o "$p" --target=cuda:sm_90 --precision=$prec 2>&1 | tail -1
    for set in 0 1; do
      out=$("$TGC" run "$p" --test-data "$m/test_data_set_$set" --tolerance $tol 2>&1); rc=$?
      [ $rc -ne 0 ] && fail=1
      echo "$prec $n set_$set rc=$rc: $(echo "$out" | tr '\n' ' ')"
    done
    if [ $prec != fp32 ]; then
      out=$(TGC_NO_CUBLASLT=1 "$TGC" run "$p" --test-data "$m/test_data_set_0" --tolerance $tol 2>&1); rc=$?
      [ $rc -ne 0 ] && fail=1
      echo "$prec $n no-cublaslt rc=$rc: $(echo "$out" | tr '\n' ' ')"
    fi
  done
done
for prec in fp32 fp16; do
  echo "== bench $prec (--iters 500)"
  for p in "$ROOT"/$prec/*/; do
    n=$(basename "$p")
    echo "$prec $n: $("$TGC" bench "$p" --test-data tests/data/models/$n/test_data_set_0 --iters 500 --warmup 50 2>&1 | tr '\n' ' ')"
  done
done
exit $fail
