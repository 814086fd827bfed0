.PHONY: setup test test-unit test-integration test-py demo up down status lint format typecheck

setup:
	bash scripts/setup.sh

# Everything, fastest first: typecheck + lint, unit layer, pytest, integration layer (scripts/test.sh).
test:
	bash scripts/test.sh

# node:test files that start no service (scripts/test-layers.ts): a few minutes.
test-unit:
	bash scripts/test.sh unit

# node:test files that start Temporal, S3, the model server or the CLI's stack.
test-integration:
	bash scripts/test.sh integration

test-py:
	bash scripts/test.sh py

demo:
	bash scripts/demo.sh

up: setup
	node bin/volt.mjs up

down:
	node bin/volt.mjs down

status:
	node bin/volt.mjs status

# Formatters (Prettier for TypeScript/JavaScript, ruff for Python) in check mode, then the linters.
lint:
	npx prettier --check --log-level warn "**/*.{ts,mts,js,mjs,cjs}"
	.venv/bin/ruff format --check -q .
	.venv/bin/ruff check -q .
	npx eslint .

# Rewrites files in place: what `make lint` checks.
format:
	npx prettier --write --log-level warn "**/*.{ts,mts,js,mjs,cjs}"
	.venv/bin/ruff format -q .
	.venv/bin/ruff check -q --fix .

typecheck:
	npx tsc --noEmit
