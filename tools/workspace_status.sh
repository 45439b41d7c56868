#!/bin/sh
# tools/workspace_status.sh — Bazel's --workspace_status_command (.bazelrc): the git commit that
# `tgc --version` reports ("unknown" outside a git checkout; "-dirty" with uncommitted changes).
c=$(git rev-parse --short=12 HEAD 2>/dev/null) || c=unknown
if [ "$c" != unknown ] && [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
  c="$c-dirty"
fi
echo "STABLE_TGC_GIT_COMMIT $c"
