#!/usr/bin/env bash
# compile_and_run_test.sh COMPILE_MODEL RUN_PACKAGE MODEL_DIR — compiles MODEL_DIR/model.onnx with
# the C compile API, runs the package on both test sets with the C runtime API (each must pass),
# and checks that errors come back as messages and exit codes: a missing model, an unknown target,
# a package that is not there.
set -uo pipefail
compile="$1" run="$2" model="$3"
out="${TEST_TMPDIR:-$(mktemp -d)}/pkg.tgpkg"
fail=0
check() { if eval "$2"; then echo "PASS $1"; else echo "FAIL $1"; fail=1; fi; }

check "compile" "'$compile' '$model/model.onnx' '$out' >/dev/null"
for k in 0 1; do
  check "run test_data_set_$k" "'$run' '$out' '$model/test_data_set_$k'"
done
check "compile from memory" "'$compile' '$model/model.onnx' '$out.mem' --from-memory yes >/dev/null"
check "run the package compiled from memory" "'$run' '$out.mem' '$model/test_data_set_0'"
msg="$("$compile" "$model/model.onnx" "$out.z" --target 2>&1)"; rc=$?
check "an option without a value: exit 1" "[ $rc -eq 1 ] && [[ \"\$msg\" == *needs\ a\ value* ]]"
msg="$("$compile" /nonexistent.onnx "$out.x" 2>&1)"; rc=$?
check "missing model: exit 1 naming it" "[ $rc -eq 1 ] && [[ \"\$msg\" == *nonexistent.onnx* ]]"
msg="$("$compile" "$model/model.onnx" "$out.y" --target cuda:sm_12 2>&1)"; rc=$?
check "unknown target: exit 1 naming it" "[ $rc -eq 1 ] && [[ \"\$msg\" == *sm_12* ]] && [ ! -e '$out.y' ]"
msg="$("$run" "$out.none" "$model/test_data_set_0" 2>&1)"; rc=$?
check "missing package: exit 2 naming it" "[ $rc -eq 2 ] && [[ \"\$msg\" == *pkg.tgpkg.none* ]]"
exit $fail
