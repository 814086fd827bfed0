import { spawn } from 'node:child_process';
import { HeadTailBuffer } from './head-tail-buffer.js';
import { signalGroup } from './process-group.js';

export interface AgentProcessOptions {
  command: readonly string[];
  cwd: string;
  env: Record<string, string>;
  timeoutMs: number;
  /** Time between SIGTERM and SIGKILL to the group on timeout or abort. */
  killGraceMs: number;
  /** How long to wait for pipes to close after the leader exited (escaped daemons may hold them). */
  drainMs: number;
  signal: AbortSignal;
  headBytes: number;
  tailBytes: number;
  /** Called right after the spawn with the group's id (the leader's pid), before the agent can do anything. */
  onSpawn?: (pgid: number | null) => void;
}

export interface AgentProcessResult {
  pid: number | null;
  exitCode: number | null;
  signal: string | null;
  spawnError: Error | null;
  timedOut: boolean;
  aborted: boolean;
  /** Pipes stayed open after the leader exited and its group was killed: something escaped the group. */
  pipesHeld: boolean;
  durationMs: number;
  stdout: Buffer;
  stderr: Buffer;
}

/**
 * Run one agent in its own session and process group, capture bounded stdout/stderr, and make sure no
 * process of its group outlives it: stop = SIGTERM to the group, SIGKILL after the grace period; when the
 * leader exits, anything it left behind in the group is killed.
 */
export function runAgentProcess(o: AgentProcessOptions): Promise<AgentProcessResult> {
  const started = performance.now();
  const [file, ...args] = o.command;
  const out = new HeadTailBuffer(o.headBytes, o.tailBytes);
  const err = new HeadTailBuffer(o.headBytes, o.tailBytes);
  return new Promise((resolve) => {
    let timedOut = false;
    let aborted = false;
    let stopping = false;
    let pipesHeld = false;
    let spawnError: Error | null = null;
    let exit: { code: number | null; signal: string | null } = { code: null, signal: null };
    const timers: NodeJS.Timeout[] = [];
    const child = spawn(file as string, args, {
      cwd: o.cwd,
      env: o.env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const pid = child.pid ?? null;
    o.onSpawn?.(pid);
    child.stdout.on('data', (c: Buffer) => out.write(c));
    child.stderr.on('data', (c: Buffer) => err.write(c));

    const stop = () => {
      if (stopping || pid === null) return;
      stopping = true;
      signalGroup(pid, 'SIGTERM');
      timers.push(setTimeout(() => signalGroup(pid, 'SIGKILL'), o.killGraceMs));
    };
    const onAbort = () => {
      aborted = true;
      stop();
    };
    let finished = false;
    const finish = () => {
      if (finished) return;
      finished = true;
      timers.forEach(clearTimeout);
      o.signal.removeEventListener('abort', onAbort);
      resolve({
        pid,
        exitCode: exit.code,
        signal: exit.signal,
        spawnError,
        timedOut,
        aborted,
        pipesHeld,
        durationMs: Math.round(performance.now() - started),
        stdout: out.toBuffer(),
        stderr: err.toBuffer(),
      });
    };

    child.on('error', (e) => {
      spawnError = e;
      if (pid === null) finish();
    });
    child.on('exit', (code, signal) => {
      exit = { code, signal };
      if (pid !== null) signalGroup(pid, 'SIGKILL');
      timers.push(
        setTimeout(() => {
          pipesHeld = true;
          child.stdout.destroy();
          child.stderr.destroy();
          finish();
        }, o.drainMs),
      );
    });
    child.on('close', finish);
    if (pid === null) return;
    timers.push(
      setTimeout(() => {
        timedOut = true;
        stop();
      }, o.timeoutMs),
    );
    if (o.signal.aborted) onAbort();
    else o.signal.addEventListener('abort', onAbort, { once: true });
  });
}
