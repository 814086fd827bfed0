#!/usr/bin/env bash
# The demo for a fresh machine (for now): set up, bring the local stack up, run the smoke workflow on it.
# The stack stays up afterwards so you can look at the run in Temporal Web; `node bin/volt.mjs down` stops it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

printf '\n==> volt up\n'
node bin/volt.mjs up

printf '\n==> volt smoke\n'
node bin/volt.mjs smoke

printf '\n==> volt status\n'
node bin/volt.mjs status
printf '\nStack is still running. Stop it with: node bin/volt.mjs down   (or: make down)\n'
