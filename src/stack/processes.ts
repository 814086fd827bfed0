import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** What `volt up` records about a service it started, so `status` and `down` can find exactly that process. */
export interface ServiceRecord {
  name: string;
  pid: number;
  command: string;
  args: string[];
  address: string;
  uiUrl?: string;
  logFile: string;
  startedAt: string;
}

export interface SpawnServiceOptions {
  name: string;
  dataDir: string;
  command: string;
  args: string[];
  address: string;
  uiUrl?: string;
  /** Extra environment for the child (e.g. credentials kept off the command line). */
  env?: Record<string, string>;
  /** Detached services outlive the process that started them (the CLI); test services do not. */
  detached: boolean;
  /** Working directory of the child (default: this process's). */
  cwd?: string;
}

export const runDir = (dataDir: string) => path.join(dataDir, 'run');
export const logDir = (dataDir: string) => path.join(dataDir, 'logs');
const recordFile = (dataDir: string, name: string) => path.join(runDir(dataDir), `${name}.json`);
const pidFile = (dataDir: string, name: string) => path.join(runDir(dataDir), `${name}.pid`);

export function spawnService(opts: SpawnServiceOptions): { record: ServiceRecord; child: ChildProcess } {
  fs.mkdirSync(runDir(opts.dataDir), { recursive: true });
  fs.mkdirSync(logDir(opts.dataDir), { recursive: true });
  const logFile = path.join(logDir(opts.dataDir), `${opts.name}.log`);
  const log = fs.openSync(logFile, 'a');
  try {
    const child = spawn(opts.command, opts.args, {
      stdio: ['ignore', log, log],
      detached: opts.detached,
      env: { ...process.env, ...opts.env },
      ...(opts.cwd ? { cwd: opts.cwd } : {}),
    });
    if (child.pid === undefined) throw new Error(`${opts.name}: could not start ${opts.command}`);
    if (opts.detached) child.unref();
    const record: ServiceRecord = {
      name: opts.name,
      pid: child.pid,
      command: opts.command,
      args: opts.args,
      address: opts.address,
      ...(opts.uiUrl ? { uiUrl: opts.uiUrl } : {}),
      logFile,
      startedAt: new Date().toISOString(),
    };
    fs.writeFileSync(pidFile(opts.dataDir, opts.name), `${child.pid}\n`);
    fs.writeFileSync(recordFile(opts.dataDir, opts.name), `${JSON.stringify(record, null, 2)}\n`);
    return { record, child };
  } finally {
    fs.closeSync(log);
  }
}

export function readRecord(dataDir: string, name: string): ServiceRecord | null {
  try {
    return JSON.parse(fs.readFileSync(recordFile(dataDir, name), 'utf8')) as ServiceRecord;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

export function removeRecord(dataDir: string, name: string): void {
  fs.rmSync(recordFile(dataDir, name), { force: true });
  fs.rmSync(pidFile(dataDir, name), { force: true });
}

/** Alive AND still our command line: a recycled PID or a zombie (empty cmdline) does not count. */
export function isOurProcess(record: Pick<ServiceRecord, 'pid' | 'command' | 'args'>): boolean {
  let cmdline: string;
  try {
    cmdline = fs.readFileSync(`/proc/${record.pid}/cmdline`, 'utf8');
  } catch {
    return false;
  }
  return cmdline === [record.command, ...record.args].map((a) => `${a}\0`).join('');
}

/** SIGTERM, wait up to graceMs, then SIGKILL; only ever signals a PID whose cmdline is ours. */
export async function stopProcess(record: ServiceRecord, graceMs = 10_000): Promise<boolean> {
  if (!isOurProcess(record)) return false;
  signal(record.pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline && isOurProcess(record)) await sleep(100);
  if (isOurProcess(record)) signal(record.pid, 'SIGKILL');
  // cmdline empties while the process is still exiting; wait until it is really gone (or only a zombie).
  const gone = Date.now() + 5_000;
  while (!processGone(record.pid) && Date.now() < gone) await sleep(50);
  return true;
}

/** No such process, or only a zombie awaiting its parent's wait(). */
export function processGone(pid: number): boolean {
  let stat: string;
  try {
    stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return true;
  }
  const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  return state === 'Z' || state === 'X';
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
  }
}

/** Last lines of a service log, for error messages when a service dies during start. */
export function logTail(logFile: string, lines = 15): string {
  try {
    return fs.readFileSync(logFile, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}
