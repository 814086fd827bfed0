#!/usr/bin/env bash
# Sets up everything and runs every test: typecheck, lint, TypeScript tests (node:test), Python tests (pytest).
# Tests start their own Temporal dev server, S3 server and model server on free loopback ports.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export VOLT_DATA_DIR=${VOLT_DATA_DIR:-$(pwd)/.volt}

printf '\n==> typecheck\n'; npx tsc --noEmit
printf '\n==> lint\n'; npx eslint .
printf '\n==> pytest trainer/tests\n'
.venv/bin/python -m pytest -q trainer/tests
printf '\n==> node --test\n'
mapfile -t files < <(find test -name '*.test.ts' | sort)
node --import tsx --test --test-concurrency=1 --test-timeout=900000 "${files[@]}"
