import fs from 'node:fs';
import path from 'node:path';
import { envSchema, type VoltEnv } from '../config/env.js';
import { spawnService, type ServiceRecord } from './processes.js';
import { waitUntilReady } from './readiness.js';
import { workerIdentity, workerPolls } from './worker-polling.js';

/** Task files and agent commands in run configs resolve from the repo root, so Volt's own processes run there. */
export const REPO_ROOT = path.resolve(import.meta.dirname, '../..');
const VOLT_CLI = path.join(REPO_ROOT, 'bin/volt.mjs');
export const MODEL_SERVER_READY_MS = 180_000;
export const WORKER_READY_MS = 180_000;
export const GATEWAY_READY_MS = 60_000;
export const DASHBOARD_READY_MS = 60_000;

/** The Python that runs the model server: VOLT_PYTHON, relative to the current directory like `volt serve`. */
export const pythonPath = (env: VoltEnv) => path.resolve(env.VOLT_PYTHON);

/** The VOLT_* environment of this CLI for a child in another cwd: the same values, paths made absolute. */
export function childVoltEnv(env: VoltEnv): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const key of Object.keys(envSchema.shape) as (keyof typeof envSchema.shape)[]) {
    const value = env[key];
    if (value !== undefined) vars[key] = String(value);
  }
  return { ...vars, VOLT_DATA_DIR: env.dataDir, VOLT_MODEL_CACHE_DIR: env.modelCacheDir, VOLT_PYTHON: pythonPath(env) };
}

export const httpOk = (url: string) =>
  fetch(url, { signal: AbortSignal.timeout(5_000) }).then(async (r) => (await r.body?.cancel(), r.ok));

export const modelServerAnswers = (url: string) => httpOk(`${url}/v1/models`);
export const gatewayAnswers = (url: string) => httpOk(`${url}/healthz`);
export const dashboardAnswers = (url: string) => httpOk(`${url}/healthz`);

export interface AppServiceOptions {
  env: VoltEnv;
  host: string;
  port: number;
  detached: boolean;
}

/** Checked before `up` starts anything, so a missing venv does not leave half a stack behind. */
export function assertPythonExists(env: VoltEnv): void {
  const python = pythonPath(env);
  if (!fs.existsSync(python))
    throw new Error(
      `VOLT_PYTHON: ${python} does not exist; run \`make setup\` or point VOLT_PYTHON at the venv's python`,
    );
}

/** `python -m volt_trainer.serve` on host:port; the first start dequantises the GGUF into modelCacheDir (~20 s). */
export async function startModelServer(o: AppServiceOptions): Promise<ServiceRecord> {
  const python = pythonPath(o.env);
  assertPythonExists(o.env);
  const url = `http://${o.host}:${o.port}`;
  const { record, child } = spawnService({
    name: 'model-server',
    dataDir: o.env.dataDir,
    command: python,
    args: [
      '-m',
      'volt_trainer.serve',
      '--model',
      'smollm2-135m-instruct',
      '--host',
      o.host,
      '--port',
      String(o.port),
      '--data-dir',
      o.env.modelCacheDir,
    ],
    address: url,
    env: { ...childVoltEnv(o.env), HF_HUB_OFFLINE: '1' },
    cwd: REPO_ROOT,
    detached: o.detached,
  });
  await waitUntilReady(`model server at ${url}`, () => modelServerAnswers(url), {
    child,
    logFile: record.logFile,
    timeoutMs: MODEL_SERVER_READY_MS,
  });
  return record;
}

/** `volt gateway` as its own Node process; ready once /healthz answers. */
export async function startGateway(o: AppServiceOptions): Promise<ServiceRecord> {
  const url = `http://${o.host}:${o.port}`;
  const { record, child } = spawnService({
    name: 'gateway',
    dataDir: o.env.dataDir,
    command: process.execPath,
    args: [VOLT_CLI, 'gateway'],
    address: url,
    // The local stack stays on loopback whatever the operator's environment says.
    env: { ...childVoltEnv(o.env), VOLT_GATEWAY_LISTEN_HOST: o.host },
    cwd: REPO_ROOT,
    detached: o.detached,
  });
  await waitUntilReady(`gateway at ${url}`, () => gatewayAnswers(url), {
    child,
    logFile: record.logFile,
    timeoutMs: GATEWAY_READY_MS,
  });
  return record;
}

/** `volt dashboard` as its own Node process, on loopback; ready once /healthz answers. */
export async function startDashboard(o: AppServiceOptions): Promise<ServiceRecord> {
  const url = `http://${o.host}:${o.port}`;
  const { record, child } = spawnService({
    name: 'dashboard',
    dataDir: o.env.dataDir,
    command: process.execPath,
    args: [VOLT_CLI, 'dashboard'],
    address: url,
    env: { ...childVoltEnv(o.env), VOLT_DASHBOARD_LISTEN_HOST: o.host },
    cwd: REPO_ROOT,
    detached: o.detached,
  });
  await waitUntilReady(`dashboard at ${url}`, () => dashboardAnswers(url), {
    child,
    logFile: record.logFile,
    timeoutMs: DASHBOARD_READY_MS,
  });
  return record;
}

/** Where the worker "is": the queues it polls on the Temporal it talks to (it listens on no port). */
export const workerAddress = (temporalAddress: string) => `volt-cpu, volt-gpu on ${temporalAddress}`;

/** `volt worker --queue all`; ready once Temporal lists it (by its pid-based identity) as a poller on both queues. */
export async function startWorker(o: {
  env: VoltEnv;
  temporalAddress: string;
  detached: boolean;
}): Promise<ServiceRecord> {
  const { record, child } = spawnService({
    name: 'worker',
    dataDir: o.env.dataDir,
    command: process.execPath,
    args: [VOLT_CLI, 'worker', '--queue', 'all'],
    address: workerAddress(o.temporalAddress),
    env: childVoltEnv(o.env),
    cwd: REPO_ROOT,
    detached: o.detached,
  });
  const ready = () => workerPolls(o.temporalAddress, o.env.VOLT_TEMPORAL_NAMESPACE, workerIdentity(record.pid));
  await waitUntilReady('worker', ready, { child, logFile: record.logFile, timeoutMs: WORKER_READY_MS });
  return record;
}
