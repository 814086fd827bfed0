import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import {
  assertPortFree,
  freePort,
  isPortFree,
  loopbackHost,
  PortInUseError,
  splitHostPort,
} from '../../src/stack/ports.js';
import { isOurProcess, processGone, readRecord, spawnService, stopProcess } from '../../src/stack/processes.js';
import { devServerArgs, loadTemporalConfig } from '../../src/stack/temporal-config.js';

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'volt-proc-'));
after(() => fs.rmSync(dataDir, { recursive: true, force: true }));

void describe('ports', () => {
  void it('a taken port is detected before starting, naming the port and variable', async () => {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as net.AddressInfo).port;
    try {
      assert.equal(await isPortFree('127.0.0.1', port), false);
      await assert.rejects(assertPortFree('S3 server', '127.0.0.1', port, 'VOLT_S3_ENDPOINT'), (err: Error) => {
        assert.ok(err instanceof PortInUseError);
        assert.match(err.message, new RegExp(`port ${port} .* set VOLT_S3_ENDPOINT`));
        return true;
      });
    } finally {
      server.close();
    }
    assert.equal(await isPortFree('127.0.0.1', await freePort()), true);
  });

  void it('parses host:port and allows loopback only', () => {
    assert.deepEqual(splitHostPort('127.0.0.1:7233'), { host: '127.0.0.1', port: 7233 });
    assert.throws(() => splitHostPort('nohost'), /expected host:port/);
    assert.equal(loopbackHost('localhost', 'X'), '127.0.0.1');
    assert.throws(() => loopbackHost('0.0.0.0', 'VOLT_TEMPORAL_ADDRESS'), /VOLT_TEMPORAL_ADDRESS: .*127\.0\.0\.1 only/);
  });
});

void describe('processes', () => {
  void it('records a detached process and stops it only when the cmdline is ours', async () => {
    const { record } = spawnService({
      name: 'sleeper',
      dataDir,
      command: '/bin/sleep',
      args: ['30'],
      address: '-',
      detached: true,
    });
    assert.deepEqual(readRecord(dataDir, 'sleeper'), record);
    assert.equal(fs.readFileSync(path.join(dataDir, 'run', 'sleeper.pid'), 'utf8').trim(), String(record.pid));
    assert.equal(isOurProcess(record), true);

    const impostor = { ...record, args: ['31'] };
    assert.equal(await stopProcess(impostor, 500), false, 'a PID with a different cmdline is left alone');
    assert.equal(isOurProcess(record), true);

    assert.equal(await stopProcess(record, 2_000), true);
    assert.equal(processGone(record.pid), true);
    assert.equal(await stopProcess(record, 500), false, 'stopping twice is a no-op');
  });

  void it('escalates to SIGKILL when SIGTERM is ignored', async () => {
    const script = "trap '' TERM; while true; do sleep 0.1; done";
    const { record } = spawnService({
      name: 'stubborn',
      dataDir,
      command: '/bin/sh',
      args: ['-c', script],
      address: '-',
      detached: true,
    });
    await new Promise((r) => setTimeout(r, 200)); // let the shell install its trap
    const started = Date.now();
    assert.equal(await stopProcess(record, 500), true);
    assert.ok(Date.now() - started >= 500, 'waited the grace period first');
    assert.equal(isOurProcess(record), false);
  });
});

void describe('temporal-config', () => {
  void it('builds dev-server flags with every Volt search attribute and the Web UI switch', () => {
    const { searchAttributes } = loadTemporalConfig();
    assert.equal(searchAttributes.VoltRunId, 'Keyword');
    const args = devServerArgs({
      dbFile: '/d/volt.db',
      host: '127.0.0.1',
      port: 7000,
      uiPort: 8000,
      namespace: 'volt',
    });
    assert.deepEqual(args.slice(0, 8), [
      'server',
      'start-dev',
      '--db-filename',
      '/d/volt.db',
      '--ip',
      '127.0.0.1',
      '--port',
      '7000',
    ]);
    assert.ok(args.includes('--ui-port') && args[args.indexOf('--ui-port') + 1] === '8000');
    assert.ok(args.includes('--namespace') && args[args.indexOf('--namespace') + 1] === 'volt');
    for (const [name, type] of Object.entries(searchAttributes)) assert.ok(args.includes(`${name}=${type}`), name);
    const headless = devServerArgs({
      dbFile: '/d/volt.db',
      host: '127.0.0.1',
      port: 7000,
      uiPort: null,
      namespace: 'default',
    });
    assert.ok(headless.includes('--headless') && !headless.includes('--ui-port') && !headless.includes('--namespace'));
  });
});
