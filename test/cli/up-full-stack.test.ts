import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { readRecord, type ServiceRecord } from '../../src/stack/processes.js';
import { SERVICES } from '../../src/stack/stack-services.js';
import { tinyRunConfig } from '../pipeline/harness.js';
import { pidAlive, ROOT, stackEnv, volt, type StackEnv } from './volt-cli.js';

// Model server start (dequantising on a cold cache) dominates; allow for a loaded machine.
const UP_MS = 400_000;
const records = (dataDir: string) => SERVICES.map((n) => readRecord(dataDir, n));
const statusRows = (stdout: string) =>
  (JSON.parse(stdout) as { name: string; state: string; answering: boolean }[]).map((s) => [
    s.name,
    s.state,
    s.answering,
  ]);
const allRunning = SERVICES.map((n) => [n, 'running', true]);

void describe('volt up / status / down with all six services (real CLI, real model server, gateway, worker)', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'volt-full-'));
  let env: StackEnv & { VOLT_MODEL_CACHE_DIR: string };

  before(async () => {
    // A shared model cache keeps the model server start at ~3 s after the first time anywhere on this machine.
    env = {
      ...(await stackEnv(dataDir)),
      VOLT_MODEL_CACHE_DIR: process.env.VOLT_MODEL_CACHE_DIR ?? path.join(ROOT, '.volt'),
    };
  });
  after(async () => {
    await volt(['down'], env);
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  void it('up starts all six in order, one line each with its address, plus the Temporal Web URL', async () => {
    const up = await volt(['up'], env, UP_MS);
    assert.equal(up.code, 0, up.stderr);
    const lines = up.stdout.trim().split('\n');
    assert.deepEqual(
      lines.slice(0, SERVICES.length).map((l) => l.split(/\s+/)[0]),
      [...SERVICES],
    );
    assert.match(up.stdout, new RegExp(`model-server\\s+started\\s+pid \\d+\\s+${env.VOLT_MODEL_SERVER_URL}`));
    assert.match(up.stdout, new RegExp(`gateway\\s+started\\s+pid \\d+\\s+${env.VOLT_GATEWAY_URL}`));
    assert.match(
      up.stdout,
      new RegExp(`worker\\s+started\\s+pid \\d+\\s+volt-cpu, volt-gpu on ${env.VOLT_TEMPORAL_ADDRESS}`),
    );
    assert.equal(lines.at(-1), `Temporal Web  http://127.0.0.1:${env.VOLT_TEMPORAL_UI_PORT}`);
    const models = (await (await fetch(`${env.VOLT_MODEL_SERVER_URL}/v1/models`)).json()) as { data: { id: string }[] };
    assert.ok(
      models.data.some((m) => m.id === 'smollm2-135m-instruct'),
      JSON.stringify(models),
    );
    assert.equal((await fetch(`${env.VOLT_GATEWAY_URL}/healthz`)).status, 200);
    assert.match(up.stdout, new RegExp(`dashboard\\s+started\\s+pid \\d+\\s+${env.VOLT_DASHBOARD_URL}`));
    const runsPage = await fetch(`${env.VOLT_DASHBOARD_URL}/`);
    assert.equal(runsPage.status, 200);
    assert.match(await runsPage.text(), /<h1>Volt runs<\/h1>/);
    const [, , model, , worker] = records(dataDir) as ServiceRecord[];
    // Run configs resolve task files and agent commands from the repo root, so the worker must run there.
    assert.equal(fs.readlinkSync(`/proc/${worker!.pid}/cwd`), ROOT);
    assert.deepEqual(model!.args.slice(-2), ['--data-dir', env.VOLT_MODEL_CACHE_DIR]);
    for (const name of ['model-server', 'gateway', 'worker', 'dashboard'])
      assert.ok(fs.statSync(path.join(dataDir, 'logs', `${name}.log`)).isFile());
    const status = await volt(['status', '--json'], env);
    assert.equal(status.code, 0, status.stdout);
    assert.deepEqual(statusRows(status.stdout), allRunning);
  });

  void it("status <runId> also prints the run's status, as run-status does", async () => {
    const runId = `status-${Date.now()}`;
    const file = path.join(dataDir, 'run.json');
    fs.writeFileSync(file, JSON.stringify(tinyRunConfig(runId)));
    const train = await volt(['train', file], env);
    assert.equal(train.code, 0, train.stderr);
    try {
      const status = await volt(['status', runId], env);
      assert.equal(status.code, 0, status.stderr);
      assert.match(status.stdout, /worker\s+running .* answering\n/);
      assert.match(status.stdout, new RegExp(`\\nrun ${runId}: iteration \\d+/1, phase \\w+`));
      const json = await volt(['status', runId, '--json'], env);
      const parsed = JSON.parse(json.stdout) as { services: unknown[]; run: { runId: string; iterations: number } };
      assert.equal(parsed.services.length, SERVICES.length);
      assert.deepEqual([parsed.run.runId, parsed.run.iterations], [runId, 1]);
      const missing = await volt(['status', 'no-such-run'], env);
      assert.equal(missing.code, 1);
      assert.match(missing.stderr, /no-such-run/);
    } finally {
      const cancel = await volt(['cancel', runId], env);
      assert.equal(cancel.code, 0, cancel.stderr);
    }
  });

  void it('down stops every recorded process, worker first, and status then exits non-zero', async () => {
    const before = records(dataDir) as ServiceRecord[];
    assert.ok(before.every((r) => r && pidAlive(r.pid)));
    const down = await volt(['down'], env);
    assert.equal(down.code, 0, down.stderr);
    assert.deepEqual(
      down.stdout
        .trim()
        .split('\n')
        .map((l) => l.split(/\s+/).slice(0, 2)),
      [...SERVICES].reverse().map((n) => [n, 'stopped']),
    );
    for (const r of before) assert.equal(pidAlive(r.pid), false, `${r.name} pid ${r.pid} still alive`);
    assert.deepEqual(
      records(dataDir),
      SERVICES.map(() => null),
    );
    const status = await volt(['status', '--json'], env);
    assert.equal(status.code, 1);
    assert.deepEqual(
      statusRows(status.stdout),
      SERVICES.map((n) => [n, 'stopped', false]),
    );
  });

  void it('up again starts all six again', async () => {
    const up = await volt(['up'], env, UP_MS);
    assert.equal(up.code, 0, up.stderr);
    for (const name of SERVICES) assert.match(up.stdout, new RegExp(`${name}\\s+started`));
    const status = await volt(['status', '--json'], env);
    assert.equal(status.code, 0, status.stdout);
    assert.deepEqual(statusRows(status.stdout), allRunning);
  });
});
