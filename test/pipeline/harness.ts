import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadEnv, type VoltEnv } from '../../src/config/env.js';
import type { RunConfigInput } from '../../src/config/run.js';
import { freePort } from '../../src/stack/ports.js';
import { startModelServer } from '../gateway/model-server.js';
import { startTestServices, type TestServices } from '../helpers/services.js';

export const root = path.resolve(import.meta.dirname, '../..');

export interface PipelineStack {
  services: TestServices;
  env: Readonly<VoltEnv>;
  vars: Record<string, string>;
  modelUrl: string;
  startGateway(): Promise<ChildProcess>;
  /** A `volt worker` process; kill it with SIGKILL to simulate a crash. */
  startWorker(queue: 'cpu' | 'gpu' | 'all'): Promise<ChildProcess>;
  stop(): Promise<void>;
}

async function waitFor(what: string, ok: () => Promise<boolean>, child: ChildProcess, log: () => string, ms = 120_000) {
  for (const t0 = Date.now(); Date.now() - t0 < ms; await sleep(200)) {
    if (child.exitCode !== null) throw new Error(`${what} exited ${child.exitCode}: ${log().slice(-2000)}`);
    if (await ok()) return;
  }
  throw new Error(`${what} not ready in ${ms} ms: ${log().slice(-2000)}`);
}

function spawnLogged(args: string[], env: Record<string, string>) {
  const child = spawn(process.execPath, args, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  child.stdout!.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-20_000)));
  child.stderr!.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-20_000)));
  return { child, log: () => log };
}

/** Real Temporal + S3 + model server + gateway (a process); workers are processes the test starts and kills. */
export async function startPipelineStack(): Promise<PipelineStack> {
  const services = await startTestServices({ temporal: true, s3: true });
  const model = await startModelServer();
  const gatewayPort = await freePort('127.0.0.1');
  const vars: Record<string, string> = {
    ...services.env,
    VOLT_TEMPORAL_ADDRESS: services.temporalAddress,
    VOLT_MODEL_SERVER_URL: model.url,
    VOLT_GATEWAY_URL: `http://127.0.0.1:${gatewayPort}`,
    VOLT_GATEWAY_ADMIN_KEY: 'pipeline-test-admin-key',
    VOLT_MODEL_CACHE_DIR: process.env.VOLT_MODEL_CACHE_DIR ?? process.env.VOLT_DATA_DIR ?? path.join(root, '.volt'),
    VOLT_PYTHON: path.join(root, '.venv/bin/python'),
  };
  const env = loadEnv(vars, root);
  const children: ChildProcess[] = [];
  const volt = path.join(root, 'bin/volt.mjs');
  return {
    services,
    env,
    vars,
    modelUrl: model.url,
    async startGateway() {
      const { child, log } = spawnLogged([volt, 'gateway'], vars);
      children.push(child);
      await waitFor('gateway', () => fetch(`${vars.VOLT_GATEWAY_URL}/healthz`).then((r) => r.ok, () => false), child, log);
      return child;
    },
    async startWorker(queue) {
      const { child, log } = spawnLogged([volt, 'worker', '--queue', queue], vars);
      children.push(child);
      let ready = false;
      child.stdout!.on('data', (d: Buffer) => (ready ||= d.toString().includes('volt worker polling')));
      await waitFor(`worker ${queue}`, async () => ready, child, log);
      return child;
    },
    async stop() {
      for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
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
    tasks: { trainFile: path.join(root, 'examples/calculator/tasks/train.jsonl'), evalFile: path.join(root, 'examples/calculator/tasks/eval.jsonl') },
    rollouts: { groupSize: 2, tasksPerIteration: 2, concurrency: 2 },
    reward: {
      kind: 'weighted_sum',
      parts: { correct: { kind: 'numeric_match', source: 'output_file', tolerance: 1e-6, weight: 1 } },
      penalties: { perCompletionToken: 0.001 },
    },
    batch: { minGroupSize: 2 },
    trainer: { lr: 1e-3, minibatchSize: 4, microBatchSize: 4 },
    eval: { tasks: 2, everyIterations: 1, promoteMargin: -1 },
    timeouts: { heartbeatSec: 30, rolloutsSec: 900, updateSec: 900 },
    ...overrides,
  } as RunConfigInput;
}
