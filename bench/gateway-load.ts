import fs from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import autocannon from 'autocannon';
import { Pool } from 'undici';
import { freePort } from '../src/stack/ports.js';
import { startS3Server } from '../src/stack/s3.js';
import { createObjectStore } from '../src/storage/object-store.js';

/**
 * One thing the bench sends chat completions to. Connection i uses paths[i % paths.length] (a Volt target gets one
 * rollout per connection, like one agent each); `health` is set for Volt targets (their upload backlog).
 */
export interface Target {
  name: string;
  origin: string;
  paths: string[];
  headers: Record<string, string>;
  health?: string;
}

const MAX_REQUESTS = 200_000;

/** The benches' S3 server (rclone, data under `dir`) on a free loopback port, its bucket made; `s3cfg` is what gateways get. */
export async function startBenchS3(dir: string) {
  const host = '127.0.0.1';
  const creds = { accessKey: 'volt-bench', secretKey: 'volt-bench-secret', bucket: 'volt-bench', region: 'us-east-1' };
  const s3 = await startS3Server({ dataDir: dir, host, port: await freePort(host), ...creds, detached: false });
  const s3cfg = { endpoint: s3.address, ...creds };
  const store = createObjectStore(s3cfg);
  await store.ensureBucket();
  return { s3, s3cfg, store };
}

/** Closed-loop load: `concurrency` workers send `payload` back to back for `seconds` (bounded count); float ms latencies (streams: to the last byte). */
export async function load(t: Target, concurrency: number, seconds: number, payload: string) {
  const pool = new Pool(t.origin, { connections: concurrency, keepAliveTimeout: 60_000 });
  const latencies: number[] = [];
  let errors = 0;
  const end = performance.now() + seconds * 1000;
  const worker = async (_: unknown, i: number) => {
    const path = t.paths[i % t.paths.length]!;
    while (performance.now() < end && latencies.length < MAX_REQUESTS) {
      const t0 = performance.now();
      const res = await pool.request({
        method: 'POST',
        path,
        headers: { 'content-type': 'application/json', ...t.headers },
        body: payload,
      });
      await res.body.text();
      if (res.statusCode !== 200) errors++;
      latencies.push(performance.now() - t0);
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  const elapsed = (performance.now() - started) / 1000;
  await pool.close();
  latencies.sort((a, b) => a - b);
  const q = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))]!;
  return { p50: q(0.5), p99: q(0.99), rps: latencies.length / elapsed, errors, requests: latencies.length };
}

/** Median time to the first SSE byte over sequential streaming calls. */
export async function ttfb(t: Target, payload: string, n = 150): Promise<number> {
  const pool = new Pool(t.origin, { connections: 1 });
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const res = await pool.request({
      method: 'POST',
      path: t.paths[0]!,
      headers: { 'content-type': 'application/json', ...t.headers },
      body: payload,
    });
    let first = 0;
    for await (const _chunk of res.body) first ||= performance.now() - t0;
    times.push(first);
  }
  await pool.close();
  return times.sort((a, b) => a - b)[Math.floor(n / 2)]!;
}

/** autocannon at 64 connections: the most requests/s the target sustains for `seconds`; requests cycle through paths. */
export async function maxRps(t: Target, seconds: number, payload: string): Promise<{ rps: number; requests: number }> {
  let n = 0;
  const setupRequest = (req: Record<string, unknown>) => ({ ...req, path: t.paths[n++ % t.paths.length] });
  const result = await autocannon({
    url: `${t.origin}${t.paths[0]}`,
    method: 'POST',
    headers: { 'content-type': 'application/json', ...t.headers },
    body: payload,
    connections: 64,
    duration: seconds,
    requests: [{ setupRequest }],
  });
  return { rps: result.requests.average, requests: result.requests.total };
}

/**
 * Waits until a Volt target has no span left to upload (bounded), so its deferred uploads never run while
 * another target is measured. Returns the seconds it took.
 */
export async function drainUploads(t: Target, limitS = 120): Promise<number> {
  if (!t.health) return 0;
  const started = performance.now();
  while (performance.now() - started < limitS * 1000) {
    const health = (await fetch(t.health).then((r) => r.json())) as { pendingUploads: number };
    if (health.pendingUploads === 0) return (performance.now() - started) / 1000;
    await sleep(50);
  }
  throw new Error(`${t.name}: uploads did not drain within ${limitS}s`);
}

/**
 * CPU milliseconds a process has run so far, all its threads or (`mainThread`) only its event loop's thread, from
 * the scheduler's nanosecond counters (/proc/.../schedstat: stat's 10 ms ticks are too coarse for short cells);
 * Linux only (null elsewhere). Threads that already exited are not counted.
 */
export function cpuMs(pid: number | undefined, mainThread = false): number | null {
  try {
    const tids = mainThread ? [String(pid)] : fs.readdirSync(`/proc/${pid}/task`);
    let ns = 0;
    for (const tid of tids) ns += Number(fs.readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    return ns / 1e6;
  } catch {
    return null;
  }
}

/** Paths of `n` fresh rollouts registered through a Volt gateway's admin API (one per connection, like one agent each). */
export async function rolloutPaths(
  admin: {
    register: (r: {
      runId: string;
      iteration: number;
      rolloutId: string;
      attempt: number;
      mode: 'train';
      policyModel: string;
    }) => Promise<{ token: string }>;
  },
  runId: string,
  prefix: string,
  n: number,
): Promise<string[]> {
  return Promise.all(
    Array.from(
      { length: n },
      async (_, i) =>
        `/r/${(await admin.register({ runId, iteration: 0, rolloutId: `${prefix}-${i}`, attempt: 0, mode: 'train', policyModel: 'policy' })).token}/v1/chat/completions`,
    ),
  );
}

export interface WarmUp {
  calls: number;
  seconds: number;
  /** CPU µs per call of the target process (all threads) in each window of the plain warm-up. */
  windows: number[];
}

/**
 * Runs a target until it is warm, so no cell measures its JIT: V8 keeps optimising a large server's code for
 * thousands of calls (Volt on the agent-sized call: ~1.6x the CPU per call and ~0.7 ms more at c=1 over its first
 * ~10,000 calls), where the bare passthrough settles within its first few thousand. Windows of `windowS` seconds of closed-loop load
 * at c=16 with the plain body until the target's CPU per call falls less than 5 % from one window to the next (at
 * least 3 windows, at most `maxS` seconds), then the streamed body the same way, uploads drained after each window.
 * `fresh(label)` gives the target with new rollouts (a Volt target) or as it is.
 */
export async function warmUp(
  fresh: (label: string) => Promise<Target>,
  pid: number | undefined,
  plain: string,
  streamed: string,
  { windowS = 2, maxS = 40 } = {},
): Promise<WarmUp> {
  const started = performance.now();
  let calls = 0;
  const windows: number[] = [];
  for (const [kind, body, limitS] of [
    ['plain', plain, maxS],
    ['sse', streamed, maxS / 2],
  ] as const) {
    const seen: number[] = [];
    for (let w = 0; w * windowS < limitS; w++) {
      const t = await fresh(`warm-${kind}-${w}`);
      const before = cpuMs(pid);
      const r = await load(t, 16, windowS, body);
      await drainUploads(t);
      const after = cpuMs(pid);
      calls += r.requests;
      if (before === null || after === null) break; // no CPU counters (not Linux): one window only
      seen.push((1000 * (after - before)) / Math.max(1, r.requests));
      if (seen.length >= 3 && seen.at(-1)! > 0.95 * seen.at(-2)!) break;
    }
    if (kind === 'plain') windows.push(...seen);
  }
  return { calls, seconds: (performance.now() - started) / 1000, windows };
}
