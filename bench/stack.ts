/**
 * How long the local stack takes to become usable and to stop, per service, cold (empty data dir) and warm (existing
 * Temporal DB), wall time on loopback with free ports.
 *   node --import tsx bench/stack.ts [--reps 3]
 * Medians over reps, side by side, with each figure's ratio to the S3 server's cold start.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { freePort } from '../src/stack/ports.js';
import { stopProcess, type ServiceRecord } from '../src/stack/processes.js';
import { startS3Server } from '../src/stack/s3.js';
import { startTemporalServer } from '../src/stack/temporal.js';

const { values } = parseArgs({ options: { reps: { type: 'string', default: '3' } } });
const reps = Math.min(Math.max(1, Number(values.reps)), 10);
const HOST = '127.0.0.1';

async function timed<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const t0 = performance.now();
  const value = await fn();
  return [value, performance.now() - t0];
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
const rows: Record<string, number[]> = {};
const add = (name: string, ms: number) => (rows[name] ??= []).push(ms);

for (let rep = 0; rep < reps; rep++) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'volt-bench-'));
  try {
    const s3Opts = {
      dataDir,
      host: HOST,
      accessKey: 'bench',
      secretKey: 'bench-secret',
      region: 'us-east-1',
      bucket: 'bench',
      detached: false,
    };
    const [s3, s3Ms] = await timed(async () => startS3Server({ ...s3Opts, port: await freePort() }));
    add('s3 start (cold)', s3Ms);
    add('s3 stop', (await timed(() => stopProcess(s3)))[1]);

    const start = async (uiPort: number | null) =>
      startTemporalServer({
        dataDir,
        host: HOST,
        port: await freePort(),
        uiPort,
        namespace: 'default',
        detached: false,
      });
    const stop = async (r: ServiceRecord) => (await timed(() => stopProcess(r)))[1];
    const [cold, coldMs] = await timed(() => start(null));
    add('temporal start headless (cold db)', coldMs);
    add('temporal stop', await stop(cold));
    const [warm, warmMs] = await timed(() => start(null));
    add('temporal start headless (warm db)', warmMs);
    add('temporal stop', await stop(warm));
    const [ui, uiMs] = await timed(async () => start(await freePort()));
    add('temporal start + Web UI (warm db)', uiMs);
    add('temporal stop', await stop(ui));
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

const base = median(rows['s3 start (cold)'] ?? []);
console.log(`local stack, wall ms, ${reps} reps, ${os.cpus().length} CPUs (${os.loadavg()[0]?.toFixed(2)} load)`);
console.log(
  `${'step'.padEnd(36)} ${'median'.padStart(8)} ${'min'.padStart(8)} ${'max'.padStart(8)} ${'x s3 start'.padStart(11)}`,
);
for (const [name, xs] of Object.entries(rows)) {
  const m = median(xs);
  console.log(
    `${name.padEnd(36)} ${m.toFixed(0).padStart(8)} ${Math.min(...xs)
      .toFixed(0)
      .padStart(8)} ${Math.max(...xs)
      .toFixed(0)
      .padStart(8)} ${(m / base).toFixed(1).padStart(11)}`,
  );
}
