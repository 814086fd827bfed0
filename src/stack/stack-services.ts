import type { VoltEnv } from '../config/env.js';
import { stackAddresses } from './addresses.js';
import {
  assertPythonExists,
  dashboardAnswers,
  DASHBOARD_READY_MS,
  gatewayAnswers,
  GATEWAY_READY_MS,
  modelServerAnswers,
  MODEL_SERVER_READY_MS,
  startDashboard,
  startGateway,
  startModelServer,
  startWorker,
  workerAddress,
  WORKER_READY_MS,
} from './app-processes.js';
import type { ServiceRecord } from './processes.js';
import { temporalAnswers } from './readiness.js';
import { ensureBucket, s3Client, startS3Server } from './s3.js';
import { startTemporalServer } from './temporal.js';
import { workerIdentity, workerPolls } from './worker-polling.js';

/** Everything `volt up` runs, in start order; `down` stops them in reverse. */
export const SERVICES = ['temporal', 's3', 'model-server', 'gateway', 'worker', 'dashboard'] as const;
export type ServiceName = (typeof SERVICES)[number];

/** One service of the local stack: where the environment puts it, how to start it and how to tell it answers. */
export interface StackService {
  name: ServiceName;
  address: string;
  uiUrl?: string;
  /** The variables that place it, named when a running one sits elsewhere. */
  envVars: string;
  /** Ports it binds, checked free before anything starts. */
  ports: { label: string; host: string; port: number; envVar: string }[];
  /** Other checks to pass before anything starts (throws, naming the variable). */
  preflight?(): void;
  /** Starts it detached and resolves once it is ready. */
  start(): Promise<ServiceRecord>;
  /** Ready to serve (`up` waits on it for a service it finds starting); may create what it needs (the bucket). */
  ready(record: ServiceRecord | null): Promise<boolean>;
  /** Answers, without side effects (`status`); `record` is our running process, if any. */
  answers(record: ServiceRecord | null): Promise<boolean>;
  readyTimeoutMs: number;
}

export function stackServices(env: VoltEnv): StackService[] {
  const a = stackAddresses(env);
  const ns = env.VOLT_TEMPORAL_NAMESPACE;
  const creds = { accessKey: env.VOLT_S3_ACCESS_KEY, secretKey: env.VOLT_S3_SECRET_KEY, region: env.VOLT_S3_REGION };
  const s3 = s3Client({ endpoint: a.s3.endpoint, ...creds });
  const temporalUp = () => temporalAnswers(a.temporal.address, ns);
  const bucketReady = () => ensureBucket(s3, env.VOLT_S3_BUCKET, env.VOLT_S3_REGION).then(() => true);
  const modelUp = () => modelServerAnswers(a.modelServer.url);
  const gatewayUp = () => gatewayAnswers(a.gateway.url);
  const dashboardUp = () => dashboardAnswers(a.dashboard.url);
  // Our worker must poll under its own pid; a worker someone else runs counts if any recent poller is there.
  const workerUp = (r: ServiceRecord | null) =>
    workerPolls(a.temporal.address, ns, r ? workerIdentity(r.pid) : undefined);
  return [
    {
      name: 'temporal',
      address: a.temporal.address,
      uiUrl: a.ui.url,
      envVars: 'VOLT_TEMPORAL_ADDRESS / VOLT_TEMPORAL_UI_PORT',
      ports: [
        { label: 'Temporal gRPC', host: a.temporal.host, port: a.temporal.port, envVar: 'VOLT_TEMPORAL_ADDRESS' },
        { label: 'Temporal Web UI', host: a.temporal.host, port: a.ui.port, envVar: 'VOLT_TEMPORAL_UI_PORT' },
      ],
      start: () =>
        startTemporalServer({ dataDir: env.dataDir, ...a.temporal, uiPort: a.ui.port, namespace: ns, detached: true }),
      ready: temporalUp,
      answers: temporalUp,
      readyTimeoutMs: 30_000,
    },
    {
      name: 's3',
      address: a.s3.endpoint,
      envVars: 'VOLT_S3_ENDPOINT',
      ports: [{ label: 'S3 server', host: a.s3.host, port: a.s3.port, envVar: 'VOLT_S3_ENDPOINT' }],
      start: () =>
        startS3Server({
          dataDir: env.dataDir,
          host: a.s3.host,
          port: a.s3.port,
          ...creds,
          bucket: env.VOLT_S3_BUCKET,
          detached: true,
        }),
      ready: bucketReady,
      answers: () => s3.bucketExists(env.VOLT_S3_BUCKET),
      readyTimeoutMs: 30_000,
    },
    {
      name: 'model-server',
      address: a.modelServer.url,
      envVars: 'VOLT_MODEL_SERVER_URL',
      ports: [
        { label: 'model server', host: a.modelServer.host, port: a.modelServer.port, envVar: 'VOLT_MODEL_SERVER_URL' },
      ],
      preflight: () => assertPythonExists(env),
      start: () => startModelServer({ env, host: a.modelServer.host, port: a.modelServer.port, detached: true }),
      ready: modelUp,
      answers: modelUp,
      readyTimeoutMs: MODEL_SERVER_READY_MS,
    },
    {
      name: 'gateway',
      address: a.gateway.url,
      envVars: 'VOLT_GATEWAY_URL',
      ports: [{ label: 'gateway', host: a.gateway.host, port: a.gateway.port, envVar: 'VOLT_GATEWAY_URL' }],
      start: () => startGateway({ env, host: a.gateway.host, port: a.gateway.port, detached: true }),
      ready: gatewayUp,
      answers: gatewayUp,
      readyTimeoutMs: GATEWAY_READY_MS,
    },
    {
      name: 'worker',
      address: workerAddress(a.temporal.address),
      envVars: 'VOLT_TEMPORAL_ADDRESS',
      ports: [],
      start: () => startWorker({ env, temporalAddress: a.temporal.address, detached: true }),
      ready: workerUp,
      answers: workerUp,
      readyTimeoutMs: WORKER_READY_MS,
    },
    {
      name: 'dashboard',
      address: a.dashboard.url,
      envVars: 'VOLT_DASHBOARD_URL',
      ports: [{ label: 'dashboard', host: a.dashboard.host, port: a.dashboard.port, envVar: 'VOLT_DASHBOARD_URL' }],
      start: () => startDashboard({ env, host: a.dashboard.host, port: a.dashboard.port, detached: true }),
      ready: dashboardUp,
      answers: dashboardUp,
      readyTimeoutMs: DASHBOARD_READY_MS,
    },
  ];
}

/** Parses `--only temporal,s3` into service names, in start order. */
export function parseServiceList(value: string): ServiceName[] {
  const names = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = names.filter((n) => !(SERVICES as readonly string[]).includes(n));
  if (unknown.length > 0 || names.length === 0)
    throw new Error(`--only: expected a comma-separated list of ${SERVICES.join(', ')}; got ${JSON.stringify(value)}`);
  return SERVICES.filter((s) => names.includes(s));
}
