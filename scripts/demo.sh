#!/usr/bin/env bash
# `make demo`: set up, bring the whole local stack up, train the one-call arithmetic agent, report. Never wipes .volt/, so a
# re-run attaches to the same run (README, "Start over", says how to begin a fresh one).
set -euo pipefail
cd "$(dirname "$0")/.."
volt() { node bin/volt.mjs "$@"; }
web="http://127.0.0.1:${VOLT_TEMPORAL_UI_PORT:-8233}"
ns=${VOLT_TEMPORAL_NAMESPACE:-default}

started=$SECONDS
bash scripts/setup.sh
setup_s=$((SECONDS - started))

printf '\n==> volt up (Temporal, S3, model server, gateway, worker, dashboard)\n'
volt up
printf 'setup %d s, volt up %d s: the run starts %d s after `make demo` (the report times iterations from the run'"'"'s start)\n' \
  "$setup_s" "$((SECONDS - started - setup_s))" "$((SECONDS - started))"

config=examples/arithmetic/run.json
run_id=$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).runId)' "$config")
printf '\n==> volt train %s --follow   (run %s)\n' "$config" "$run_id"
printf 'Ctrl-C only stops watching: the run goes on in the worker. `make demo` again resumes watching the same run.\n\n'
trap 'printf "\nStopped watching; run %s goes on. Watch: %s/namespaces/%s/workflows/%s  (or: make demo)\n" "$run_id" "$web" "$ns" "$run_id"; exit 130' INT
volt train "$config" --follow || {
  printf '\nRun %s ended without a result. `make demo` again re-attaches to this same run; README "Start over" says\nhow to begin a fresh one. Worker log: %s/logs/worker.log\n' "$run_id" "${VOLT_DATA_DIR:-.volt}" >&2
  exit 1
}
trap - INT
printf '\n==> volt report %s\n' "$run_id"
volt report "$run_id"
printf '\nThe run in Temporal Web: %s/namespaces/%s/workflows/%s\n' "$web" "$ns" "$run_id"
printf 'The run in the dashboard: %s/runs/%s\n' "${VOLT_DASHBOARD_URL:-http://127.0.0.1:8600}" "$run_id"

printf '\n==> volt status\n'
volt status || true
printf '\nTemporal Web: %s\nThe stack is still running. Stop it with: node bin/volt.mjs down   (or: make down)\n' "$web"
