#!/usr/bin/env bash
# Sets up everything and runs the tests, fastest feedback first:
#   static       typecheck + formatters' checks + lint (make lint)
#   unit         node:test files that start no service (scripts/test-layers.ts decides; a few minutes)
#   py           pytest trainer/tests
#   integration  node:test files that start a Temporal dev server, S3 server, model server or the volt CLI's stack
# `scripts/test.sh` runs all four (what `make test` and CI run); `scripts/test.sh unit` (or static, py, integration)
# runs one layer. Tests start their own services on free loopback ports.
set -euo pipefail
cd "$(dirname "$0")/.."
layer=${1:-all}
case "$layer" in all|static|unit|py|integration) ;; *) echo "usage: scripts/test.sh [all|static|unit|py|integration]" >&2; exit 2 ;; esac
bash scripts/setup.sh
export VOLT_DATA_DIR=${VOLT_DATA_DIR:-$(pwd)/.volt}

phase() { printf '\n==> %s\n' "$1"; SECONDS=0; }
took() { printf '==> %s took %d s\n' "$1" "$SECONDS"; }
node_layer() {
  local files
  mapfile -t files < <(node --import tsx scripts/test-layers.ts "$1")
  # With no file arguments node --test would pick its own set: an empty layer is a classifier failure.
  [ "${#files[@]}" -gt 0 ] || { echo "scripts/test-layers.ts listed no $1 tests" >&2; exit 1; }
  phase "node --test: $1 layer (${#files[@]} files)"
  node --import tsx --test --test-concurrency=1 --test-timeout=900000 "${files[@]}"
  took "$1 layer"
}

if [ "$layer" = all ] || [ "$layer" = static ]; then
  phase typecheck; npx tsc --noEmit; took typecheck
  phase lint; make --no-print-directory lint; took lint
fi
if [ "$layer" = all ] || [ "$layer" = unit ]; then node_layer unit; fi
if [ "$layer" = all ] || [ "$layer" = py ]; then
  phase 'pytest trainer/tests'; .venv/bin/python -m pytest -q trainer/tests; took pytest
fi
if [ "$layer" = all ] || [ "$layer" = integration ]; then node_layer integration; fi
