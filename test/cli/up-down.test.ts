import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { freePort } from '../../src/stack/ports.js';
import { readRecord, type ServiceRecord } from '../../src/stack/processes.js';
import { TEMPORAL_BIN } from '../../src/stack/temporal.js';
import { pidAlive, stackEnv, volt, type StackEnv } from './volt-cli.js';

const run = promisify(execFile);
const temporalCli = (args: string[], address: string) =>
  run(TEMPORAL_BIN, [...args, '--address', address], { timeout: 30_000 });
// The model server, gateway and worker are covered by up-full-stack.test.ts; here only the two `--only` keeps.
const ONLY = ['--only', 'temporal,s3'];

void describe('volt up --only temporal,s3 / down / status (real CLI, real services)', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'volt-cli-'));
  let env: StackEnv;
  let address: string;
  let uiPort: number;

  before(async () => {
    env = await stackEnv(dataDir);
    address = env.VOLT_TEMPORAL_ADDRESS;
    uiPort = Number(env.VOLT_TEMPORAL_UI_PORT);
  });
  after(async () => {
    await volt(['down'], env);
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  void it('up starts Temporal (with Web UI) and S3 and prints the addresses', async () => {
    const up = await volt(['up', ...ONLY], env);
    assert.equal(up.code, 0, up.stderr);
    assert.match(up.stdout, new RegExp(`temporal\\s+started\\s+pid \\d+\\s+${address}`));
    assert.match(up.stdout, new RegExp(`Temporal Web\\s+http://127\\.0\\.0\\.1:${uiPort}`));
    assert.match(up.stdout, new RegExp(`s3\\s+started\\s+pid \\d+\\s+${env.VOLT_S3_ENDPOINT}`));
    assert.doesNotMatch(up.stdout, /model-server|gateway|worker/);
    const res = await fetch(`http://127.0.0.1:${uiPort}/`);
    assert.equal(res.status, 200);
    await res.body?.cancel();
    const status = await volt(['status', '--json', ...ONLY], env);
    assert.equal(status.code, 0, status.stdout);
    assert.deepEqual(
      JSON.parse(status.stdout).map((s: { name: string; state: string; answering: boolean }) => [
        s.name,
        s.state,
        s.answering,
      ]),
      [
        ['temporal', 'running', true],
        ['s3', 'running', true],
      ],
    );
  });

  void it('the Temporal CLI can list and start workflows against it', async () => {
    await temporalCli(['workflow', 'list'], address);
    await temporalCli(
      [
        'workflow',
        'start',
        '--type',
        'smokeWorkflow',
        '--task-queue',
        'no-worker',
        '--workflow-id',
        'cli-kept',
        '--input',
        '{"runId":"r1","message":"m"}',
      ],
      address,
    );
  });

  void it('down stops exactly the recorded processes and status then exits non-zero', async () => {
    const records = ['temporal', 's3'].map((n) => readRecord(dataDir, n)) as ServiceRecord[];
    assert.ok(records.every((r) => r && pidAlive(r.pid)));
    const down = await volt(['down'], env);
    assert.equal(down.code, 0, down.stderr);
    assert.match(down.stdout, new RegExp(`temporal\\s+stopped \\(pid ${records[0]?.pid}\\)`));
    for (const r of records) assert.equal(pidAlive(r.pid), false, `${r.name} pid ${r.pid} still alive`);
    assert.equal(readRecord(dataDir, 'temporal'), null);
    const status = await volt(['status', ...ONLY], env);
    assert.equal(status.code, 1);
    assert.match(status.stdout, /temporal\s+stopped/);
  });

  void it('up again keeps the data: the workflow started before down is still there', async () => {
    const up = await volt(['up', ...ONLY], env);
    assert.equal(up.code, 0, up.stderr);
    const { stdout } = await temporalCli(['workflow', 'describe', '--workflow-id', 'cli-kept', '-o', 'json'], address);
    assert.equal(JSON.parse(stdout).workflowExecutionInfo.type.name, 'smokeWorkflow');
    const list = await temporalCli(['workflow', 'list'], address);
    assert.match(list.stdout, /cli-kept/);
  });

  void it('a second up reports what already runs', async () => {
    const up = await volt(['up', ...ONLY], env);
    assert.equal(up.code, 0, up.stderr);
    assert.match(up.stdout, /temporal\s+already running/);
    assert.match(up.stdout, /s3\s+already running/);
  });

  void it('up refuses when the environment now names other ports than the running stack', async () => {
    const moved = await volt(['up', ...ONLY], { ...env, VOLT_TEMPORAL_UI_PORT: String(await freePort()) });
    assert.equal(moved.code, 1);
    assert.match(
      moved.stderr,
      /temporal already runs at .* but VOLT_TEMPORAL_ADDRESS \/ VOLT_TEMPORAL_UI_PORT now say .*volt down/,
    );
  });

  void it('a taken port fails before starting anything, naming the port and the variable', async () => {
    const otherDir = fs.mkdtempSync(path.join(os.tmpdir(), 'volt-cli-other-'));
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const taken = (blocker.address() as net.AddressInfo).port;
    try {
      const [g, u] = [await freePort(), await freePort()];
      const clash = {
        VOLT_DATA_DIR: otherDir,
        VOLT_TEMPORAL_ADDRESS: `127.0.0.1:${g}`,
        VOLT_TEMPORAL_UI_PORT: String(u),
        VOLT_S3_ENDPOINT: `http://127.0.0.1:${taken}`,
      };
      const up = await volt(['up', ...ONLY], clash);
      assert.equal(up.code, 1);
      assert.match(up.stderr, new RegExp(`port ${taken} .*already in use.*VOLT_S3_ENDPOINT`));
      assert.equal(readRecord(otherDir, 'temporal'), null, 'Temporal must not start when the S3 port is taken');
      const grpcTaken = await volt(['up', ...ONLY], { ...clash, VOLT_TEMPORAL_ADDRESS: address });
      assert.match(grpcTaken.stderr, new RegExp(`port ${address.split(':')[1]} .*VOLT_TEMPORAL_ADDRESS`));
    } finally {
      blocker.close();
      fs.rmSync(otherDir, { recursive: true, force: true });
    }
  });

  void it('a missing VOLT_PYTHON fails before anything starts; a model server that dies is reported with its log', async () => {
    const otherDir = fs.mkdtempSync(path.join(os.tmpdir(), 'volt-cli-py-'));
    try {
      const other = await stackEnv(otherDir);
      const missing = await volt(['up'], { ...other, VOLT_PYTHON: path.join(otherDir, 'no-python') });
      assert.equal(missing.code, 1);
      assert.match(missing.stderr, /VOLT_PYTHON: .*no-python does not exist/);
      assert.equal(readRecord(otherDir, 'temporal'), null, 'Temporal must not start when the model server cannot');
      const dies = await volt(['up', '--only', 'model-server'], { ...other, VOLT_PYTHON: '/bin/false' });
      assert.equal(dies.code, 1);
      assert.match(
        dies.stderr,
        new RegExp(
          `model server at ${other.VOLT_MODEL_SERVER_URL} exited with code 1; last log lines \\(${otherDir}/logs/model-server.log\\)`,
        ),
      );
    } finally {
      await volt(['down'], { VOLT_DATA_DIR: otherDir });
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
    const badList = await volt(['up', '--only', 'temporal,postgres'], env);
    assert.equal(badList.code, 2);
    assert.match(
      badList.stderr,
      /--only: expected a comma-separated list of temporal, s3, model-server, gateway, worker, dashboard; got "temporal,postgres"/,
    );
  });
});
