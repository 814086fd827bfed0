import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { runCli } from '../../src/cli/run-cli.js';
import { processGone } from '../../src/stack/processes.js';
import { stablePort } from '../helpers/stable-port.js';

const run = promisify(execFile);
export const ROOT = path.resolve(import.meta.dirname, '../..');

/** Runs the real CLI; never throws, returns exit code and output. */
export async function volt(args: string[], env: Record<string, string>, timeoutMs = 120_000) {
  try {
    const { stdout, stderr } = await run(process.execPath, [path.join(ROOT, 'bin/volt.mjs'), ...args], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      timeout: timeoutMs,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/** The real CLI dispatcher in-process with captured output: what `volt` runs, without a node + tsx start per call. */
export async function voltInProcess(args: string[], env: Record<string, string>) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(args, {
    out: (l) => out.push(l),
    err: (l) => err.push(l),
    env: { ...process.env, ...env },
  });
  return { code, stdout: out.join('\n'), stderr: err.join('\n') };
}

export const pidAlive = (pid: number) => !processGone(pid);

/** VOLT_* variables for a whole stack of its own: dataDir plus free loopback ports for every service. */
export async function stackEnv(dataDir: string) {
  // Below the ephemeral range: `up` again after `down` reuses them (stop 25's CI: S3's port was taken in between).
  const [grpc, ui, s3, model, gateway, dashboard] = [
    await stablePort(),
    await stablePort(),
    await stablePort(),
    await stablePort(),
    await stablePort(),
    await stablePort(),
  ];
  return {
    VOLT_DATA_DIR: dataDir,
    VOLT_TEMPORAL_ADDRESS: `127.0.0.1:${grpc}`,
    VOLT_TEMPORAL_UI_PORT: String(ui),
    VOLT_S3_ENDPOINT: `http://127.0.0.1:${s3}`,
    VOLT_MODEL_SERVER_URL: `http://127.0.0.1:${model}`,
    VOLT_GATEWAY_URL: `http://127.0.0.1:${gateway}`,
    VOLT_DASHBOARD_URL: `http://127.0.0.1:${dashboard}`,
  };
}

export type StackEnv = Awaited<ReturnType<typeof stackEnv>>;
