import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadEnv, type VoltEnv } from '../../src/config/env.js';
import { connectClient } from '../../src/client/connect.js';
import { startTrainingRun } from '../../src/client/runs.js';
import type { RunConfig, RunConfigInput } from '../../src/config/run.js';
import type { Span } from '../../src/contracts/span.js';
import { keys } from '../../src/storage/keys.js';
import { createObjectStore } from '../../src/storage/object-store.js';
import { spanObjectText } from '../../src/storage/span-compression.js';
import { spanOfStoredLine } from '../../src/storage/spans.js';
import type { RunStatus } from '../../src/workflows/types.js';
import { stablePort } from '../helpers/stable-port.js';
import { temporalAnswers } from '../../src/stack/readiness.js';
import { devServerArgs } from '../../src/stack/temporal-config.js';
import { TEMPORAL_BIN, temporalDbFile } from '../../src/stack/temporal.js';
import { MODEL_ADMIN_KEY, startModelServer } from '../gateway/model-server.js';
import { readRecord } from '../../src/stack/processes.js';
import { startS3Server } from '../../src/stack/s3.js';
import { alive, killHard, running, until } from '../helpers/processes.js';
import { startTestServices, type TestServices } from '../helpers/services.js';

export const root = path.resolve(import.meta.dirname, '../..');

export interface PipelineStack {
  services: TestServices;
  env: Readonly<VoltEnv>;
  vars: Record<string, string>;
  modelUrl: string;
  startGateway(): Promise<ChildProcess>;
  /** A `volt worker` process; kill it with SIGKILL to simulate a crash. `readyMs`: how long it may take to poll. */
  startWorker(queue: 'cpu' | 'gpu' | 'all', readyMs?: number): Promise<ChildProcess>;
  /** Only with `ownTemporal`: (re)start the dev server on the same port and SQLite file. */
  startTemporal(): Promise<ChildProcess>;
  /** (Re)start the model server on the same port (the gateway and workers keep its URL). */
  startModel(): Promise<void>;
  /** Restart a killed S3 server on the same port and data (what `volt up` runs). */
  startS3(): Promise<void>;
  /** SIGKILL the latest gateway, Temporal, model or S3 server process and wait until it is gone. */
  kill(what: 'gateway' | 'temporal' | 'model' | 's3'): Promise<void>;
  /** Send a signal to the latest gateway, Temporal or model server process (SIGSTOP / SIGCONT freeze and thaw it). */
  signal(what: 'gateway' | 'temporal' | 'model', signal: NodeJS.Signals): void;
  stop(): Promise<void>;
}

export interface PipelineStackOptions {
  /** Run the Temporal dev server from the harness so a test can kill -9 and restart it; extra dynamic config. */
  ownTemporal?: { dynamicConfig?: Record<string, string | number | boolean> };
}

async function waitFor(what: string, ok: () => Promise<boolean>, child: ChildProcess, log: () => string, ms = 600_000) {
  for (const t0 = Date.now(); Date.now() - t0 < ms; await sleep(200)) {
    if (child.exitCode !== null) throw new Error(`${what} exited ${child.exitCode}: ${log().slice(-2000)}`);
    if (await ok()) return;
  }
  throw new Error(`${what} not ready in ${ms} ms: ${log().slice(-2000)}`);
}

function spawnLogged(args: string[], env: Record<string, string>) {
  const child = spawn(process.execPath, args, {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  child.stdout!.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-20_000)));
  child.stderr!.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-20_000)));
  return { child, log: () => log };
}

/** Real Temporal + S3 + model server + gateway (a process); workers are processes the test starts and kills. */
export async function startPipelineStack(options: PipelineStackOptions = {}): Promise<PipelineStack> {
  const services = await startTestServices({ temporal: !options.ownTemporal, s3: true });
  const temporalPort = options.ownTemporal ? await stablePort('127.0.0.1') : 0;
  const temporalAddress = options.ownTemporal ? `127.0.0.1:${temporalPort}` : services.temporalAddress;
  let model = await startModelServer({ readyMs: 600_000 }); // a loaded machine can take minutes
  const modelPort = Number(new URL(model.url).port);
  const gatewayPort = await stablePort('127.0.0.1');
  const vars: Record<string, string> = {
    ...services.env,
    VOLT_TEMPORAL_ADDRESS: temporalAddress,
    VOLT_MODEL_SERVER_URL: model.url,
    VOLT_GATEWAY_URL: `http://127.0.0.1:${gatewayPort}`,
    VOLT_GATEWAY_ADMIN_KEY: 'pipeline-test-admin-key',
    VOLT_MODEL_SERVER_ADMIN_KEY: MODEL_ADMIN_KEY,
    VOLT_MODEL_CACHE_DIR: process.env.VOLT_MODEL_CACHE_DIR ?? process.env.VOLT_DATA_DIR ?? path.join(root, '.volt'),
    VOLT_PYTHON: path.join(root, '.venv/bin/python'),
  };
  const env = loadEnv(vars, root);
  const children: ChildProcess[] = [];
  const restartedS3: number[] = [];
  const latest: Partial<Record<'gateway' | 'temporal' | 'model', ChildProcess>> = { model: model.child };
  const volt = path.join(root, 'bin/volt.mjs');
  const startTemporal = async () => {
    const dbFile = temporalDbFile(services.dataDir);
    fs.mkdirSync(path.dirname(dbFile), { recursive: true });
    const args = devServerArgs({ dbFile, host: '127.0.0.1', port: temporalPort, uiPort: null, namespace: 'default' });
    for (const [k, v] of Object.entries(options.ownTemporal?.dynamicConfig ?? {}))
      args.push('--dynamic-config-value', `${k}=${JSON.stringify(v)}`);
    const child = spawn(TEMPORAL_BIN, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let log = '';
    child.stdout!.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-20_000)));
    child.stderr!.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-20_000)));
    children.push(child);
    latest.temporal = child;
    await waitFor(
      'temporal',
      () => temporalAnswers(temporalAddress, 'default').catch(() => false),
      child,
      () => log,
    );
    return child;
  };
  if (options.ownTemporal) await startTemporal();
  return {
    services,
    env,
    vars,
    modelUrl: model.url,
    async startGateway() {
      const { child, log } = spawnLogged([volt, 'gateway'], vars);
      children.push(child);
      latest.gateway = child;
      await waitFor(
        'gateway',
        () =>
          fetch(`${vars.VOLT_GATEWAY_URL}/healthz`).then(
            (r) => r.ok,
            () => false,
          ),
        child,
        log,
      );
      return child;
    },
    async startWorker(queue, readyMs) {
      const { child, log } = spawnLogged([volt, 'worker', '--queue', queue], vars);
      children.push(child);
      let ready = false;
      child.stdout!.on('data', (d: Buffer) => (ready ||= d.toString().includes('volt worker polling')));
      // A worker bundles the workflow code first: minutes on a loaded 2-core machine.
      await waitFor(`worker ${queue}`, async () => ready, child, log, readyMs ?? 600_000);
      return child;
    },
    startTemporal,
    async startModel() {
      model = await startModelServer({ port: modelPort, readyMs: 600_000 });
      latest.model = model.child;
    },
    async startS3() {
      const { s3 } = services;
      const record = await startS3Server({
        dataDir: services.dataDir,
        host: '127.0.0.1',
        port: Number(new URL(s3.endpoint).port),
        ...s3,
        detached: false,
      });
      restartedS3.push(record.pid);
    },
    async kill(what) {
      if (what === 's3') {
        // started by the test services (src/stack, as `volt up` does): known by its PID record
        const pid = readRecord(services.dataDir, 's3')!.pid;
        process.kill(pid, 'SIGKILL');
        return until('the S3 server to die', () => !alive(pid), 30_000, 50);
      }
      const child = latest[what];
      if (!child) throw new Error(`no running ${what} to kill`);
      await killHard(child, what);
    },
    signal(what, signal) {
      const child = latest[what];
      if (!running(child)) throw new Error(`no running ${what} to signal`);
      child.kill(signal);
    },
    async stop() {
      latest.model?.kill('SIGCONT'); // a frozen server would not stop
      for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
      for (const pid of restartedS3) if (alive(pid)) process.kill(pid, 'SIGKILL');
      await model.stop();
      await services.stop();
    },
  };
}

/** A tiny run of the calculator agent: few tasks, small groups, rewards with variance (a per-token penalty). */
export function tinyRunConfig(runId: string, overrides: Partial<RunConfigInput> = {}): RunConfigInput {
  return {
    runId,
    seed: 7,
    iterations: 1,
    agent: {
      command: [path.join(root, 'node_modules/.bin/tsx'), path.join(root, 'examples/calculator-ts/agent.ts')],
      envAllowList: ['PATH', 'HOME', 'AGENT_MAX_TURNS', 'AGENT_MAX_TOKENS'],
      timeoutSec: 120,
    },
    tasks: {
      trainFile: path.join(root, 'examples/calculator/tasks/train.jsonl'),
      evalFile: path.join(root, 'examples/calculator/tasks/eval.jsonl'),
    },
    rollouts: { groupSize: 2, tasksPerIteration: 2, concurrency: 2 },
    reward: {
      kind: 'weighted_sum',
      parts: { correct: { kind: 'numeric_match', source: 'output_file', tolerance: 1e-6, weight: 1 } },
      penalties: { perCompletionToken: 0.001 },
    },
    batch: { minGroupSize: 2 },
    trainer: { lr: 1e-3, minibatchSize: 4, microBatchSize: 4 },
    eval: { tasks: 2, everyIterations: 1, promoteMargin: 0 },
    timeouts: { heartbeatSec: 30, rolloutsSec: 900, updateSec: 900 },
    ...overrides,
  } as RunConfigInput;
}

/** Start a training run on the stack and wait for its result. */
export async function trainToEnd(env: Readonly<VoltEnv>, config: RunConfig): Promise<RunStatus> {
  const { client, close } = await connectClient(env);
  try {
    const { handle } = await startTrainingRun(client, config);
    return await handle.result();
  } finally {
    await close();
  }
}

/** Every span stored under an iteration (training and evaluation rollouts), decoded the way readSpans does. */
export async function iterationSpans(env: Readonly<VoltEnv>, runId: string, iteration: number): Promise<Span[]> {
  const store = createObjectStore(env);
  const spans: Span[] = [];
  for await (const o of store.list(keys.iteration(runId, iteration))) {
    if (!o.key.includes('/spans/')) continue;
    for (const line of spanObjectText(await store.getBytes(o.key)).split('\n'))
      if (line) spans.push(spanOfStoredLine(line) as Span);
  }
  return spans;
}
