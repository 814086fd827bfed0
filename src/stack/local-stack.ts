import type { VoltEnv } from '../config/env.js';
import { assertPortFree } from './ports.js';
import { isOurProcess, readRecord, removeRecord, stopProcess, type ServiceRecord } from './processes.js';
import { httpAnswers, waitUntilReady } from './readiness.js';
import { SERVICES, stackServices, type ServiceName, type StackService } from './stack-services.js';

export interface ServiceStatus {
  name: ServiceName;
  state: 'running' | 'stopped';
  pid: number | null;
  address: string;
  uiUrl?: string;
  answering: boolean;
  uiAnswering?: boolean;
  /** `up` only: whether this call started it or found it already running. */
  action?: 'started' | 'already running';
}

/** Our running record for a service, or null (a stale record of a dead process is cleared). */
function runningRecord(env: VoltEnv, name: ServiceName): ServiceRecord | null {
  const record = readRecord(env.dataDir, name);
  if (!record) return null;
  if (isOurProcess(record)) return record;
  removeRecord(env.dataDir, name);
  return null;
}

/** A service `up` finds running must be the one the environment describes, or callers would talk to the wrong port. */
function assertRunsWhereConfigured(r: ServiceRecord, s: StackService): void {
  if (r.address === s.address && (s.uiUrl === undefined || r.uiUrl === s.uiUrl)) return;
  const where = [r.address, r.uiUrl].filter(Boolean).join(' + ');
  throw new Error(
    `${r.name} already runs at ${where} (pid ${r.pid}) but ${s.envVars} now say ${[s.address, s.uiUrl].filter(Boolean).join(' + ')}; run \`volt down\` first`,
  );
}

const selected = (env: VoltEnv, only?: readonly ServiceName[]) =>
  stackServices(env).filter((s) => !only || only.includes(s.name));

/**
 * Starts, in order, whatever of `only` (default: all) is not already running, detached so it outlives the CLI,
 * each once the one before is ready; `onReady` hears of each service as soon as it is.
 */
export async function upStack(
  env: VoltEnv,
  only?: readonly ServiceName[],
  onReady?: (s: ServiceStatus) => void,
): Promise<ServiceStatus[]> {
  const services = selected(env, only);
  const found = new Map(services.map((s) => [s.name, runningRecord(env, s.name)] as const));
  for (const s of services) {
    const record = found.get(s.name);
    if (record) assertRunsWhereConfigured(record, s);
  }
  // Check every port first so a taken one does not leave half a stack behind.
  for (const s of services) {
    if (found.get(s.name)) continue;
    for (const p of s.ports) await assertPortFree(p.label, p.host, p.port, p.envVar);
    s.preflight?.();
  }
  const results: ServiceStatus[] = [];
  for (const s of services) {
    const running = found.get(s.name) ?? null;
    // A service found running may still be starting (a concurrent `up`): report it only once it answers.
    if (running)
      await waitUntilReady(`${s.name} at ${s.address}`, () => s.ready(running), {
        logFile: running.logFile,
        timeoutMs: s.readyTimeoutMs,
      });
    const record = running ?? (await s.start());
    const status: ServiceStatus = {
      name: s.name,
      state: 'running',
      pid: record.pid,
      address: record.address,
      ...(record.uiUrl ? { uiUrl: record.uiUrl } : {}),
      answering: true,
      action: running ? 'already running' : 'started',
    };
    onReady?.(status);
    results.push(status);
  }
  return results;
}

/** Stops exactly the processes recorded under dataDir/run, worker first so nothing new starts mid-shutdown; data stays. */
export async function downStack(env: VoltEnv): Promise<{ name: ServiceName; pid: number | null; stopped: boolean }[]> {
  const results = [];
  for (const name of [...SERVICES].reverse()) {
    const record = readRecord(env.dataDir, name);
    const stopped = record ? await stopProcess(record) : false;
    removeRecord(env.dataDir, name);
    results.push({ name, pid: record?.pid ?? null, stopped });
  }
  return results;
}

/** Each service: our process alive or not, and whether its address answers (it may be someone else's). */
export async function stackStatus(env: VoltEnv, only?: readonly ServiceName[]): Promise<ServiceStatus[]> {
  const probe = (p: () => Promise<boolean>) => p().catch(() => false);
  return Promise.all(
    selected(env, only).map(async (s): Promise<ServiceStatus> => {
      const record = runningRecord(env, s.name);
      const uiUrl = record?.uiUrl ?? s.uiUrl;
      const [answering, uiAnswering] = await Promise.all([
        probe(() => s.answers(record)),
        uiUrl ? probe(() => httpAnswers(uiUrl)) : undefined,
      ]);
      return {
        name: s.name,
        state: record ? 'running' : 'stopped',
        pid: record?.pid ?? null,
        address: s.address,
        ...(uiUrl ? { uiUrl, uiAnswering } : {}),
        answering,
      };
    }),
  );
}
