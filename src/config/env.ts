import { isIP } from 'node:net';
import path from 'node:path';
import { z } from 'zod';
import { installationCredentials } from './credentials.js';
import { parseFrozen } from './errors.js';

const port = z.coerce.number().int().min(1).max(65535);
const hostname = /^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/i;
const listenHost = z
  .string()
  .refine((h) => isIP(h) !== 0 || hostname.test(h), 'expected an IP address (e.g. 0.0.0.0, ::) or a host name');

/** Environment of every Volt process (CLI, workers, gateway); read once with loadEnv(). */
export const envSchema = z.object({
  VOLT_DATA_DIR: z.string().min(1).default('.volt'),
  VOLT_TEMPORAL_ADDRESS: z
    .string()
    .regex(/^[^:\s]+:\d+$/, 'expected host:port')
    .default('127.0.0.1:7233'),
  VOLT_TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  VOLT_TEMPORAL_UI_PORT: port.default(8233),
  VOLT_S3_ENDPOINT: z.url().default('http://127.0.0.1:9100'),
  VOLT_S3_ACCESS_KEY: z.string().min(3).default('volt'),
  VOLT_S3_SECRET_KEY: z.string().min(8).default('volt-secret-key'),
  VOLT_S3_BUCKET: z
    .string()
    .regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, 'invalid S3 bucket name')
    .default('volt'),
  VOLT_S3_REGION: z.string().min(1).default('us-east-1'),
  VOLT_GATEWAY_URL: z.url().default('http://127.0.0.1:8400'),
  VOLT_GATEWAY_ADMIN_KEY: z.string().min(8).default('volt-admin-dev-key'),
  /** Bearer key of the model server's control endpoints (adapter load/unload); the server reads it from its env. */
  VOLT_MODEL_SERVER_ADMIN_KEY: z.string().min(8).default('volt-model-admin-dev-key'),
  /** Interface the gateway binds (the port is VOLT_GATEWAY_URL's); 0.0.0.0 in a pod so its Service reaches it. */
  VOLT_GATEWAY_LISTEN_HOST: listenHost.default('127.0.0.1'),
  /** When a span counts as durable: 'write' survives kill -9 (fdatasync follows within ms); 'fsync' also an OS crash. */
  VOLT_GATEWAY_WAL_SYNC: z.enum(['write', 'fsync']).default('write'),
  /** 'write' mode: at most this long between a span's write and its background fdatasync (the OS-crash window). */
  VOLT_GATEWAY_WAL_SYNC_INTERVAL_MS: z.coerce.number().int().min(1).max(10_000).default(100),
  /**
   * MiB of call records whose upload may wait while agent calls are in flight (on disk in the WAL, read back when
   * uploaded, not held in memory); 0 = none. Larger means fewer, larger segment puts under load.
   */
  VOLT_GATEWAY_UPLOAD_DEFER_MB: z.coerce.number().int().min(0).max(4096).default(128),
  /**
   * Set on each of several gateway replicas behind one address (unique, stable across restarts: e.g. the pod name):
   * rollouts and span seqs are then shared through the object store. Unset: one gateway with a local registry.
   */
  VOLT_GATEWAY_REPLICA_ID: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/, 'use 1-63 of [A-Za-z0-9_-], starting with a letter or digit')
    .optional(),
  /** Replicas: how long a close waits for the spans other replicas numbered but have not uploaded yet. */
  VOLT_GATEWAY_CLOSE_WAIT_MS: z.coerce.number().int().min(0).max(600_000).default(30_000),
  /** Bearer key for /metrics; beyond loopback (VOLT_GATEWAY_LISTEN_HOST) /metrics needs it or the admin key. */
  VOLT_GATEWAY_METRICS_KEY: z.string().min(16).optional(),
  VOLT_MODEL_SERVER_URL: z.url().default('http://127.0.0.1:8500'),
  /**
   * Where workers send the model server's control calls (adapter load/unload, /v1/models); default
   * VOLT_MODEL_SERVER_URL. On a cluster: the model server pod's adapter loader (`volt adapter-loader`).
   */
  VOLT_MODEL_SERVER_CONTROL_URL: z.url().optional(),
  /** Bearer key the gateway sends with every inference call (vLLM's --api-key); unset: none is sent. */
  VOLT_MODEL_SERVER_API_KEY: z.string().min(8).optional(),
  /**
   * How an adapter reaches the model server: 'local' unpacks it under VOLT_DATA_DIR/adapters and sends that path (one
   * machine, or a shared disk); 'store' sends its object-store URI (s3://<bucket>/checkpoints/<sha256>/), which the
   * model server's adapter loader fetches itself.
   */
  VOLT_ADAPTER_SOURCE: z.enum(['local', 'store']).default('local'),
  VOLT_PYTHON: z.string().min(1).default('.venv/bin/python'),
  /** Where `volt dashboard` listens (its port) and what links to it; `volt up` runs it. */
  VOLT_DASHBOARD_URL: z.url().default('http://127.0.0.1:8600'),
  /** Interface the dashboard binds (the port is VOLT_DASHBOARD_URL's); beyond loopback it needs VOLT_DASHBOARD_TOKEN. */
  VOLT_DASHBOARD_LISTEN_HOST: listenHost.default('127.0.0.1'),
  /** Access token of the dashboard: asked of every request when set (a bearer header, or `?token=` once per browser). */
  VOLT_DASHBOARD_TOKEN: z.string().min(16).optional(),
  /**
   * OTLP/HTTP traces endpoint (e.g. http://collector:4318/v1/traces): workers then export every scored rollout as a
   * trace (GenAI semantic conventions; docs/dashboard.md). Unset: no export.
   */
  VOLT_OTLP_TRACES_URL: z.url().optional(),
  /** With VOLT_OTLP_TRACES_URL: also export each call's messages (prompts and answers leave Volt). */
  VOLT_OTLP_TRACES_MESSAGES: z
    .enum(['true', 'false', '1', '0'])
    .default('false')
    .transform((v) => v === 'true' || v === '1'),
  /** Temporal Web as the dashboard links to it; default http://<VOLT_TEMPORAL_ADDRESS host>:<VOLT_TEMPORAL_UI_PORT>. */
  VOLT_TEMPORAL_WEB_URL: z.url().optional(),
  /** Where dequantised base models are cached for the trainer and model server (default: the data dir). */
  VOLT_MODEL_CACHE_DIR: z.string().min(1).optional(),
});

export type VoltEnv = z.output<typeof envSchema> & { readonly dataDir: string; readonly modelCacheDir: string };

/** Parse the Volt variables out of an environment (process.env by default), resolve paths, freeze. */
export function loadEnv(source: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): Readonly<VoltEnv> {
  const picked = Object.fromEntries(Object.entries(source).filter(([k, v]) => k.startsWith('VOLT_') && v !== ''));
  const env = parseFrozen(envSchema, picked, 'environment');
  const dataDir = path.resolve(cwd, env.VOLT_DATA_DIR);
  return finishEnv(env, dataDir, cwd);
}

/**
 * loadEnv for the processes of a local installation (CLI, `volt up` and what it starts): S3 keys and admin keys the
 * environment does not set come from `<dataDir>/credentials.json`, generated on first use, never public defaults.
 */
export function loadInstallationEnv(source: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): Readonly<VoltEnv> {
  const picked = Object.fromEntries(Object.entries(source).filter(([k, v]) => k.startsWith('VOLT_') && v !== ''));
  const dataDir = path.resolve(cwd, parseFrozen(envSchema, picked, 'environment').VOLT_DATA_DIR);
  const env = parseFrozen(envSchema, { ...installationCredentials(dataDir), ...picked }, 'environment');
  return finishEnv(env, dataDir, cwd);
}

function finishEnv(env: z.output<typeof envSchema>, dataDir: string, cwd: string): Readonly<VoltEnv> {
  return Object.freeze({ ...env, dataDir, modelCacheDir: path.resolve(cwd, env.VOLT_MODEL_CACHE_DIR ?? dataDir) });
}
