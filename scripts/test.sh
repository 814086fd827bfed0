#!/usr/bin/env bash
# Sets up everything and runs the tests, fastest feedback first:
#   static       typecheck and `make lint` (formatters' checks + linters), side by side
#   unit         node:test files that start no service (scripts/test-layers.ts decides), two files at a time
#   py           pytest trainer/tests
#   integration  node:test files that start a Temporal dev server, S3 server, model server or the volt CLI's stack,
#                VOLT_TEST_CONCURRENCY files at a time (default 2); each file starts its own services on free
#                loopback ports in its own temp dir, so files do not interfere
# `scripts/test.sh` runs all four (what `make test` and CI run; pytest then runs beside the integration layer, its
# output shown when it ends); `scripts/test.sh unit` (or static, py, integration) runs one layer. Each layer prints
# its time.
set -euo pipefail
cd "$(dirname "$0")/.."
layer=${1:-all}
case "$layer" in all|static|unit|py|integration) ;; *) echo "usage: scripts/test.sh [all|static|unit|py|integration]" >&2; exit 2 ;; esac
bash scripts/setup.sh
export VOLT_DATA_DIR=${VOLT_DATA_DIR:-$(pwd)/.volt}
concurrency=${VOLT_TEST_CONCURRENCY:-2}
total_start=$SECONDS

phase() { printf '\n==> %s\n' "$1"; phase_start=$SECONDS; }
took() { printf '==> %s took %d s\n' "$1" "$((SECONDS - phase_start))"; }
node_layer() { # node_layer LAYER CONCURRENCY
  local files
  mapfile -t files < <(node --import tsx scripts/test-layers.ts "$1" | slow_first)
  # With no file arguments node --test would pick its own set: an empty layer is a classifier failure.
  [ "${#files[@]}" -gt 0 ] || { echo "scripts/test-layers.ts listed no $1 tests" >&2; exit 1; }
  phase "node --test: $1 layer (${#files[@]} files, $2 at a time)"
  # The status is kept by hand: a caller's `node_layer ... || rc=$?` turns errexit off inside the function.
  local rc=0
  node --import tsx --test --test-concurrency="$2" --test-timeout=900000 "${files[@]}" || rc=$?
  took "$1 layer"
  return "$rc"
}
# Files that run a whole pipeline stack (minutes each) start first, so the parallel lanes end together.
slow_first() {
  local f slow=() rest=()
  while read -r f; do
    if grep -qE 'startPipelineStack|startNightlyStack' "$f"; then slow+=("$f"); else rest+=("$f"); fi
  done
  for f in "${slow[@]}" "${rest[@]}"; do echo "$f"; done
}
pytest_run() { .venv/bin/python -m pytest -q -p no:cacheprovider trainer/tests; }

if [ "$layer" = all ] || [ "$layer" = static ]; then
  phase 'typecheck + lint'
  npx tsc --noEmit & typecheck=$!
  make --no-print-directory lint
  wait "$typecheck"
  took 'typecheck + lint'
fi
if [ "$layer" = all ] || [ "$layer" = unit ]; then node_layer unit 2; fi
if [ "$layer" = py ]; then
  phase 'pytest trainer/tests'; pytest_run; took pytest
fi
if [ "$layer" = integration ]; then node_layer integration "$concurrency"; fi
if [ "$layer" = all ]; then
  # pytest is CPU work while the integration layer mostly waits on its services: they share the machine well.
  mkdir -p "$VOLT_DATA_DIR/test-logs"
  pylog="$VOLT_DATA_DIR/test-logs/pytest.log"
  py_start=$SECONDS
  (pytest_run > "$pylog" 2>&1; echo "$?" > "$pylog.rc"; echo "$((SECONDS - py_start))" > "$pylog.secs") & pytest_pid=$!
  integration_rc=0
  node_layer integration "$concurrency" || integration_rc=$?
  wait "$pytest_pid" || true
  printf '\n==> pytest trainer/tests (ran beside the integration layer; %s)\n' "$pylog"
  tail -n 30 "$pylog"
  printf '==> pytest took %s s\n' "$(cat "$pylog.secs")"
  [ "$(cat "$pylog.rc")" = 0 ] || { echo "pytest failed (exit $(cat "$pylog.rc")): $pylog" >&2; exit 1; }
  [ "$integration_rc" = 0 ] || exit "$integration_rc"
fi
printf '\n==> %s took %d s in all (setup included)\n' "scripts/test.sh $layer" "$SECONDS"
