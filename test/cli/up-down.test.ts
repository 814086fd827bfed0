import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { freePort } from '../../src/stack/ports.js';
import { processGone, readRecord, type ServiceRecord } from '../../src/stack/processes.js';
import { TEMPORAL_BIN } from '../../src/stack/temporal.js';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../..');

/** Runs the real CLI; never throws, returns exit code and output. */
async function volt(args: string[], env: Record<string, string>) {
  try {
    const { stdout, stderr } = await run(process.execPath, [path.join(ROOT, 'bin/volt.mjs'), ...args], { cwd: ROOT, env: { ...process.env, ...env }, timeout: 120_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

const temporalCli = (args: string[], address: string) => run(TEMPORAL_BIN, [...args, '--address', address], { timeout: 30_000 });

const pidAlive = (pid: number) => !processGone(pid);

void describe('volt up / down / status (real CLI, real services)', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'volt-cli-'));
  let env: Record<string, string>;
  let address: string;
  let uiPort: number;

  before(async () => {
    const [grpc, ui, s3] = [await freePort(), await freePort(), await freePort()];
    address = `127.0.0.1:${grpc}`;
    uiPort = ui;
    env = { VOLT_DATA_DIR: dataDir, VOLT_TEMPORAL_ADDRESS: address, VOLT_TEMPORAL_UI_PORT: String(ui), VOLT_S3_ENDPOINT: `http://127.0.0.1:${s3}` };
  });
  after(async () => {
    await volt(['down'], env);
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  void it('up starts Temporal (with Web UI) and S3 and prints the addresses', async () => {
    const up = await volt(['up'], env);
    assert.equal(up.code, 0, up.stderr);
    assert.match(up.stdout, new RegExp(`Temporal gRPC\\s+${address}`));
    assert.match(up.stdout, new RegExp(`Temporal Web UI\\s+http://127\\.0\\.0\\.1:${uiPort}`));
    assert.match(up.stdout, new RegExp(`S3 endpoint\\s+${env.VOLT_S3_ENDPOINT}`));
    const res = await fetch(`http://127.0.0.1:${uiPort}/`);
    assert.equal(res.status, 200);
    await res.body?.cancel();
    const status = await volt(['status', '--json'], env);
    assert.equal(status.code, 0, status.stdout);
    assert.deepEqual(JSON.parse(status.stdout).map((s: { name: string; state: string; answering: boolean }) => [s.name, s.state, s.answering]), [['temporal', 'running', true], ['s3', 'running', true]]);
  });

  void it('the Temporal CLI can list and start workflows against it', async () => {
    await temporalCli(['workflow', 'list'], address);
    await temporalCli(['workflow', 'start', '--type', 'smokeWorkflow', '--task-queue', 'no-worker', '--workflow-id', 'cli-kept', '--input', '{"runId":"r1","message":"m"}'], address);
  });

  void it('down stops exactly the recorded processes and status then exits non-zero', async () => {
    const records = ['temporal', 's3'].map((n) => readRecord(dataDir, n)) as ServiceRecord[];
    assert.ok(records.every((r) => r && pidAlive(r.pid)));
    const down = await volt(['down'], env);
    assert.equal(down.code, 0, down.stderr);
    assert.match(down.stdout, new RegExp(`temporal\\s+stopped \\(pid ${records[0]?.pid}\\)`));
    for (const r of records) assert.equal(pidAlive(r.pid), false, `${r.name} pid ${r.pid} still alive`);
    assert.equal(readRecord(dataDir, 'temporal'), null);
    const status = await volt(['status'], env);
    assert.equal(status.code, 1);
    assert.match(status.stdout, /temporal\s+stopped/);
  });

  void it('up again keeps the data: the workflow started before down is still there', async () => {
    const up = await volt(['up'], env);
    assert.equal(up.code, 0, up.stderr);
    const { stdout } = await temporalCli(['workflow', 'describe', '--workflow-id', 'cli-kept', '-o', 'json'], address);
    assert.equal(JSON.parse(stdout).workflowExecutionInfo.type.name, 'smokeWorkflow');
    const list = await temporalCli(['workflow', 'list'], address);
    assert.match(list.stdout, /cli-kept/);
  });

  void it('a second up reports what already runs', async () => {
    const up = await volt(['up'], env);
    assert.equal(up.code, 0, up.stderr);
    assert.match(up.stdout, /temporal\s+already running/);
    assert.match(up.stdout, /s3\s+already running/);
  });

  void it('up refuses when the environment now names other ports than the running stack', async () => {
    const moved = await volt(['up'], { ...env, VOLT_TEMPORAL_UI_PORT: String(await freePort()) });
    assert.equal(moved.code, 1);
    assert.match(moved.stderr, /temporal already runs at .* but VOLT_TEMPORAL_ADDRESS \/ VOLT_TEMPORAL_UI_PORT now say .*volt down/);
  });

  void it('a taken port fails before starting anything, naming the port and the variable', async () => {
    const otherDir = fs.mkdtempSync(path.join(os.tmpdir(), 'volt-cli-other-'));
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const taken = (blocker.address() as net.AddressInfo).port;
    try {
      const [g, u] = [await freePort(), await freePort()];
      const clash = { VOLT_DATA_DIR: otherDir, VOLT_TEMPORAL_ADDRESS: `127.0.0.1:${g}`, VOLT_TEMPORAL_UI_PORT: String(u), VOLT_S3_ENDPOINT: `http://127.0.0.1:${taken}` };
      const up = await volt(['up'], clash);
      assert.equal(up.code, 1);
      assert.match(up.stderr, new RegExp(`port ${taken} .*already in use.*VOLT_S3_ENDPOINT`));
      assert.equal(readRecord(otherDir, 'temporal'), null, 'Temporal must not start when the S3 port is taken');
      const grpcTaken = await volt(['up'], { ...clash, VOLT_TEMPORAL_ADDRESS: address });
      assert.match(grpcTaken.stderr, new RegExp(`port ${address.split(':')[1]} .*VOLT_TEMPORAL_ADDRESS`));
    } finally {
      blocker.close();
      fs.rmSync(otherDir, { recursive: true, force: true });
    }
  });

  void it('bad environment is a usage error naming the variable', async () => {
    const bad = await volt(['status'], { ...env, VOLT_TEMPORAL_UI_PORT: 'eighty' });
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /VOLT_TEMPORAL_UI_PORT/);
    const unknown = await volt(['up', '--bogus'], env);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /--bogus/);
  });
});
