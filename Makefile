.PHONY: setup test demo up down status lint typecheck

setup:
	bash scripts/setup.sh

test:
	bash scripts/test.sh

demo:
	bash scripts/demo.sh

up: setup
	node bin/volt.mjs up

down:
	node bin/volt.mjs down

status:
	node bin/volt.mjs status

lint:
	npx eslint .

typecheck:
	npx tsc --noEmit
