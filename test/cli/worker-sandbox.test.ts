import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdir, symlink } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startTestServices, type TestServices } from '../helpers/services.js';
import { ROOT } from './volt-cli.js';

/**
 * A cpu worker on a machine without bubblewrap (the image of deploy/ has none) starts, and says at once that local
 * rollouts will fail there and that the Kubernetes runner is the way, instead of leaving it to the first rollout.
 */
void describe('volt worker without the rollout sandbox', () => {
  let services: TestServices;
  before(async () => {
    services = await startTestServices({ temporal: true, s3: true });
  });
  after(async () => {
    await services?.stop();
  });

  void it('warns at start, naming what is missing and rollouts.runner "kubernetes"', async () => {
    // A PATH with a shell and nothing else: no bwrap, socat or prlimit.
    const bin = path.join(services.dataDir, 'bin');
    await mkdir(bin);
    await symlink('/bin/sh', path.join(bin, 'sh'));
    const child = spawn(process.execPath, [path.join(ROOT, 'bin/volt.mjs'), 'worker', '--queue', 'cpu'], {
      cwd: ROOT,
      env: { ...services.env, VOLT_DATA_DIR: services.dataDir, PATH: bin, HOME: services.dataDir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    try {
      const deadline = Date.now() + 120_000;
      while (!/warning/.test(stderr) && child.exitCode === null && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 100));
      assert.match(stdout, /volt worker polling volt-cpu/, stderr);
      assert.match(stderr, /volt worker: warning: runs with rollouts.runner "local" .* will fail their rollouts/);
      assert.match(stderr, /bwrap is not on PATH/);
      assert.match(stderr, /rollouts\.runner: "kubernetes" \(deploy\/README\.md\)/);
      assert.equal(child.exitCode, null, 'the worker keeps running: Kubernetes runs need no sandbox here');
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  });
});
