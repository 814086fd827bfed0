import { spawn } from 'node:child_process';

export interface ProcessOutcome {
  exitCode: number | null;
  timedOut: boolean;
  /** stdout then stderr, each capped at `maxBytes`. */
  stdout: string;
  stderr: string;
}

/** Runs a check with the rollout's workdir as cwd, in the rollout's own environment (its sandbox, after the agent exited). */
export type RunInWorkdir = (
  argv: readonly string[],
  opts: { timeoutMs: number; input?: string; env?: NodeJS.ProcessEnv; maxBytes?: number },
) => Promise<ProcessOutcome>;

/** The plain runner: the check as a child of this process (what an unsandboxed rollout gets). */
export const runInWorkdir =
  (workdir: string): RunInWorkdir =>
  (argv, opts) =>
    runProcess(argv, { ...opts, cwd: workdir });

/**
 * Run argv in `cwd` with a hard timeout that kills the whole process group (a check may fork).
 * Rejects only when the process cannot start (an infra problem); a non-zero exit or timeout is an outcome.
 */
export function runProcess(
  argv: readonly string[],
  opts: { cwd: string; timeoutMs: number; input?: string; env?: NodeJS.ProcessEnv; maxBytes?: number },
): Promise<ProcessOutcome> {
  const maxBytes = opts.maxBytes ?? 1 << 20;
  const [cmd, ...args] = argv;
  if (cmd === undefined) return Promise.reject(new Error('empty command'));
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      cwd: opts.cwd,
      env: opts.env ?? { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      detached: true,
      stdio: 'pipe',
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let outBytes = 0;
    let errBytes = 0;
    let timedOut = false;
    child.stdout.on('data', (b: Buffer) => {
      if (outBytes < maxBytes) {
        out.push(b);
        outBytes += b.length;
      }
    });
    child.stderr.on('data', (b: Buffer) => {
      if (errBytes < maxBytes) {
        err.push(b);
        errBytes += b.length;
      }
    });
    const timer = setTimeout(() => {
      timedOut = true;
      // Negative pid: the whole group, so forked grandchildren die with the check.
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    }, opts.timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({
        exitCode: code,
        timedOut,
        stdout: Buffer.concat(out).toString('utf8').slice(0, maxBytes),
        stderr: Buffer.concat(err).toString('utf8').slice(0, maxBytes),
      });
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(opts.input ?? '');
  });
}
