import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

/** Polls `check` until it holds; the error names what was awaited. */
export async function until(
  what: string,
  check: () => boolean | Promise<boolean>,
  ms = 600_000,
  everyMs = 200,
): Promise<void> {
  for (const t0 = Date.now(); Date.now() - t0 < ms; await sleep(everyMs)) if (await check()) return;
  throw new Error(`timed out after ${ms} ms waiting for ${what}`);
}

/** Alive and not a zombie (a killed orphan may linger as one until init reaps it). */
export function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

export const running = (child: ChildProcess | undefined): child is ChildProcess =>
  child !== undefined && child.exitCode === null && child.signalCode === null;

/** SIGKILL, as a crash or power cut would, and resolve once the process is gone. */
export async function killHard(child: ChildProcess, what = 'process'): Promise<void> {
  if (!running(child)) throw new Error(`no running ${what} to kill`);
  const gone = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await gone;
}
