import { spawn, type ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { stablePort } from '../helpers/stable-port.js';

export const SERVED_MODEL = 'smollm2-135m-instruct';
/** The admin key the test model server's control endpoints (adapter load/unload) want. */
export const MODEL_ADMIN_KEY = 'test-model-admin-key';

/**
 * Volt's real Python model server (SmolLM2-135M on CPU) on a loopback port (a free one unless given, e.g. to restart
 * a killed server where the gateway expects it), ready once /v1/models answers.
 */
export async function startModelServer(
  opts: { port?: number; readyMs?: number } = {},
): Promise<{ url: string; child: ChildProcess; stop(): Promise<void> }> {
  const readyMs = opts.readyMs ?? 120_000;
  const port = opts.port ?? (await stablePort('127.0.0.1'));
  const child: ChildProcess = spawn(
    '.venv/bin/python',
    ['-m', 'volt_trainer.serve', '--model', SERVED_MODEL, '--host', '127.0.0.1', '--port', String(port)],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, PYTHONPATH: 'trainer', VOLT_MODEL_SERVER_ADMIN_KEY: MODEL_ADMIN_KEY },
    },
  );
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await Promise.race([exited, sleep(5_000).then(() => child.kill('SIGKILL'))]);
  };
  for (const started = Date.now(); Date.now() - started < readyMs; await sleep(250)) {
    if (child.exitCode !== null) throw new Error(`model server exited ${child.exitCode}: ${output.slice(-2000)}`);
    if (
      await fetch(`${url}/v1/models`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return { url, child, stop };
  }
  await stop();
  throw new Error(`model server not ready in ${readyMs / 1000} s: ${output.slice(-2000)}`);
}
