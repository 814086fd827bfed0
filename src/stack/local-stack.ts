import type { VoltEnv } from '../config/env.js';
import { assertPortFree, loopbackHost, splitHostPort } from './ports.js';
import { isOurProcess, readRecord, removeRecord, stopProcess, type ServiceRecord } from './processes.js';
import { httpAnswers, temporalAnswers, waitUntilReady } from './readiness.js';
import { ensureBucket, s3Client, startS3Server } from './s3.js';
import { startTemporalServer } from './temporal.js';

export const SERVICES = ['temporal', 's3'] as const;
export type ServiceName = (typeof SERVICES)[number];

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

/** The addresses the stack serves, derived from the environment (loopback only). */
export function stackAddresses(env: VoltEnv) {
  const temporal = splitHostPort(env.VOLT_TEMPORAL_ADDRESS);
  const s3 = new URL(env.VOLT_S3_ENDPOINT);
  if (s3.protocol !== 'http:' || !s3.port) throw new Error(`VOLT_S3_ENDPOINT: the local S3 server needs http://127.0.0.1:<port>, got ${env.VOLT_S3_ENDPOINT}`);
  const temporalHost = loopbackHost(temporal.host, 'VOLT_TEMPORAL_ADDRESS');
  return {
    temporal: { host: temporalHost, port: temporal.port, address: `${temporalHost}:${temporal.port}` },
    ui: { port: env.VOLT_TEMPORAL_UI_PORT, url: `http://${temporalHost}:${env.VOLT_TEMPORAL_UI_PORT}` },
    s3: { host: loopbackHost(s3.hostname, 'VOLT_S3_ENDPOINT'), port: Number(s3.port), endpoint: `http://${s3.hostname}:${s3.port}` },
  };
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
function assertRunsWhereConfigured(r: ServiceRecord, address: string, uiUrl: string | undefined, envVars: string): void {
  if (r.address === address && (uiUrl === undefined || r.uiUrl === uiUrl)) return;
  const where = [r.address, r.uiUrl].filter(Boolean).join(' + ');
  throw new Error(`${r.name} already runs at ${where} (pid ${r.pid}) but ${envVars} now say ${[address, uiUrl].filter(Boolean).join(' + ')}; run \`volt down\` first`);
}

/** Starts whatever is not already running, detached so it outlives the CLI; creates the bucket. */
export async function upStack(env: VoltEnv): Promise<ServiceStatus[]> {
  const a = stackAddresses(env);
  const creds = { accessKey: env.VOLT_S3_ACCESS_KEY, secretKey: env.VOLT_S3_SECRET_KEY, region: env.VOLT_S3_REGION };
  const temporal = runningRecord(env, 'temporal');
  const s3 = runningRecord(env, 's3');
  if (temporal) assertRunsWhereConfigured(temporal, a.temporal.address, a.ui.url, 'VOLT_TEMPORAL_ADDRESS / VOLT_TEMPORAL_UI_PORT');
  if (s3) assertRunsWhereConfigured(s3, `http://${a.s3.host}:${a.s3.port}`, undefined, 'VOLT_S3_ENDPOINT');
  // Check every port first so a taken one does not leave half a stack behind.
  if (!temporal) {
    await assertPortFree('Temporal gRPC', a.temporal.host, a.temporal.port, 'VOLT_TEMPORAL_ADDRESS');
    await assertPortFree('Temporal Web UI', a.temporal.host, a.ui.port, 'VOLT_TEMPORAL_UI_PORT');
  }
  if (!s3) await assertPortFree('S3 server', a.s3.host, a.s3.port, 'VOLT_S3_ENDPOINT');

  const t = temporal ?? (await startTemporalServer({
    dataDir: env.dataDir, ...a.temporal, uiPort: a.ui.port, namespace: env.VOLT_TEMPORAL_NAMESPACE, detached: true,
  }));
  const s = s3 ?? (await startS3Server({
    dataDir: env.dataDir, host: a.s3.host, port: a.s3.port, ...creds, bucket: env.VOLT_S3_BUCKET, detached: true,
  }));
  // A service found running may still be starting (a concurrent `up`): report it only once it answers.
  if (temporal) await waitUntilReady(`Temporal at ${t.address}`, () => temporalAnswers(t.address, env.VOLT_TEMPORAL_NAMESPACE), { logFile: t.logFile, timeoutMs: 30_000 });
  if (s3) await waitUntilReady(`S3 server at ${s.address}`, () => ensureBucket(s3Client({ endpoint: s.address, ...creds }), env.VOLT_S3_BUCKET, env.VOLT_S3_REGION).then(() => true), { logFile: s.logFile, timeoutMs: 30_000 });
  const action = (found: ServiceRecord | null) => (found ? 'already running' : 'started') as ServiceStatus['action'];
  return [
    { name: 'temporal', state: 'running', pid: t.pid, address: t.address, uiUrl: t.uiUrl, answering: true, action: action(temporal) },
    { name: 's3', state: 'running', pid: s.pid, address: s.address, answering: true, action: action(s3) },
  ];
}

/** Stops exactly the processes recorded under dataDir/run; data stays. Returns what it stopped. */
export async function downStack(env: VoltEnv): Promise<{ name: ServiceName; pid: number | null; stopped: boolean }[]> {
  const results = [];
  for (const name of SERVICES) {
    const record = readRecord(env.dataDir, name);
    const stopped = record ? await stopProcess(record) : false;
    removeRecord(env.dataDir, name);
    results.push({ name, pid: record?.pid ?? null, stopped });
  }
  return results;
}

/** Each service: our process alive or not, and whether its address answers (it may be someone else's). */
export async function stackStatus(env: VoltEnv): Promise<ServiceStatus[]> {
  const a = stackAddresses(env);
  const probe = (p: () => Promise<boolean>) => p().catch(() => false);
  const t = runningRecord(env, 'temporal');
  const s = runningRecord(env, 's3');
  const uiUrl = t?.uiUrl ?? a.ui.url;
  const s3 = s3Client({ endpoint: a.s3.endpoint, accessKey: env.VOLT_S3_ACCESS_KEY, secretKey: env.VOLT_S3_SECRET_KEY, region: env.VOLT_S3_REGION });
  const [tOk, uiOk, sOk] = await Promise.all([
    probe(() => temporalAnswers(a.temporal.address, env.VOLT_TEMPORAL_NAMESPACE)),
    probe(() => httpAnswers(uiUrl)),
    probe(() => s3.bucketExists(env.VOLT_S3_BUCKET)),
  ]);
  return [
    { name: 'temporal', state: t ? 'running' : 'stopped', pid: t?.pid ?? null, address: a.temporal.address, uiUrl, answering: tOk, uiAnswering: uiOk },
    { name: 's3', state: s ? 'running' : 'stopped', pid: s?.pid ?? null, address: a.s3.endpoint, answering: sOk },
  ];
}
