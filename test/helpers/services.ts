import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { stablePort } from './stable-port.js';
import { isOurProcess, stopProcess, type ServiceRecord } from '../../src/stack/processes.js';
import { startS3Server } from '../../src/stack/s3.js';
import { startTemporalServer } from '../../src/stack/temporal.js';

export interface TestS3 {
  endpoint: string;
  accessKey: string;
  secretKey: string;
  bucket: string;
  region: string;
}

export interface TestServices {
  /** host:port of a real Temporal dev server (headless), or '' when not requested. */
  temporalAddress: string;
  namespace: string;
  s3: TestS3;
  /** VOLT_* variables pointing at these services; merge into loadEnv()'s source or a child's env. */
  env: Record<string, string>;
  dataDir: string;
  stop(): Promise<void>;
}

const HOST = '127.0.0.1';

/**
 * Starts a real Temporal dev server and/or a real S3 server (rclone) on free loopback ports in a fresh temp dir,
 * using the same code as `volt up`. Call stop() in an `after` hook; it kills both and removes the dir.
 */
export async function startTestServices(
  want: { temporal?: boolean; s3?: boolean } = { temporal: true, s3: true },
): Promise<TestServices> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'volt-test-'));
  const started: ServiceRecord[] = [];
  // If the test process dies without calling stop(), take the servers with it.
  const killOnExit = () => started.forEach((r) => isOurProcess(r) && process.kill(r.pid, 'SIGKILL'));
  process.once('exit', killOnExit);
  const stop = async () => {
    process.off('exit', killOnExit);
    await Promise.all(started.map((r) => stopProcess(r, 5_000)));
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  const namespace = 'default';
  const s3: TestS3 = {
    endpoint: '',
    accessKey: 'volt-test',
    secretKey: 'volt-test-secret',
    bucket: 'volt-test',
    region: 'us-east-1',
  };
  let temporalAddress = '';
  try {
    const jobs: Promise<void>[] = [];
    if (want.temporal) {
      // Below the ephemeral range: the Temporal dev server binds internal ports from it while S3 starts beside it.
      const port = await stablePort(HOST);
      jobs.push(
        startTemporalServer({ dataDir, host: HOST, port, uiPort: null, namespace, detached: false }).then((r) => {
          started.push(r);
          temporalAddress = r.address;
        }),
      );
    }
    if (want.s3) {
      const port = await stablePort(HOST);
      jobs.push(
        startS3Server({ dataDir, host: HOST, port, ...s3, detached: false }).then((r) => {
          started.push(r);
          s3.endpoint = r.address;
        }),
      );
    }
    const results = await Promise.allSettled(jobs);
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  } catch (err) {
    await stop();
    throw err;
  }
  const env: Record<string, string> = { VOLT_DATA_DIR: dataDir, VOLT_TEMPORAL_NAMESPACE: namespace };
  if (temporalAddress) env.VOLT_TEMPORAL_ADDRESS = temporalAddress;
  if (s3.endpoint) {
    Object.assign(env, {
      VOLT_S3_ENDPOINT: s3.endpoint,
      VOLT_S3_ACCESS_KEY: s3.accessKey,
      VOLT_S3_SECRET_KEY: s3.secretKey,
      VOLT_S3_BUCKET: s3.bucket,
      VOLT_S3_REGION: s3.region,
    });
  }
  return { temporalAddress, namespace, s3, env, dataDir, stop };
}
