/**
 * Gateway overhead, side by side: direct to a mock upstream, through Volt (WAL durability, and direct-to-S3
 * durability), through Portkey, and through a bare undici passthrough (the floor). Figures are printed, not
 * asserted. Run: node --import tsx bench/gateway.ts [--seconds 3]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import autocannon from 'autocannon';
import { Pool } from 'undici';
import { GatewayAdminClient } from '../src/gateway/admin-client.js';
import { freePort } from '../src/stack/ports.js';
import { stopProcess } from '../src/stack/processes.js';
import { startS3Server } from '../src/stack/s3.js';
import { createObjectStore } from '../src/storage/object-store.js';

const SECONDS = Number(process.argv[process.argv.indexOf('--seconds') + 1] || 3) || 3;
const MAX_REQUESTS = 200_000;
const HOST = '127.0.0.1';
const children: ChildProcess[] = [];

interface Target { name: string; origin: string; path: string; headers: Record<string, string> }

async function spawnTarget(args: string[]): Promise<void> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/gateway-targets.ts', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  for (let i = 0; i < 300; i++) {
    if (out.includes('ready') || out.includes('Ready for connections')) return;
    if (child.exitCode !== null) throw new Error(`bench target ${args[0]} exited: ${out}`);
    await sleep(100);
  }
  throw new Error(`bench target ${args[0]} not ready: ${out}`);
}

const body = (stream: boolean) => JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'What is the answer?' }], stream });

/** Closed-loop load: `concurrency` workers send back to back for SECONDS (bounded count); float ms latencies. */
async function load(t: Target, concurrency: number) {
  const pool = new Pool(t.origin, { connections: concurrency, keepAliveTimeout: 60_000 });
  const latencies: number[] = [];
  let errors = 0;
  const payload = body(false);
  const end = performance.now() + SECONDS * 1000;
  const worker = async () => {
    while (performance.now() < end && latencies.length < MAX_REQUESTS) {
      const t0 = performance.now();
      const res = await pool.request({ method: 'POST', path: t.path, headers: { 'content-type': 'application/json', ...t.headers }, body: payload });
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
  return { p50: q(0.5), p99: q(0.99), rps: latencies.length / elapsed, errors };
}

/** Median time to the first SSE byte over sequential streaming calls. */
async function ttfb(t: Target, n = 150): Promise<number> {
  const pool = new Pool(t.origin, { connections: 1 });
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const res = await pool.request({ method: 'POST', path: t.path, headers: { 'content-type': 'application/json', ...t.headers }, body: body(true) });
    let first = 0;
    for await (const _chunk of res.body) first ||= performance.now() - t0;
    times.push(first);
  }
  await pool.close();
  return times.sort((a, b) => a - b)[Math.floor(n / 2)]!;
}

async function maxRps(t: Target): Promise<number> {
  const result = await autocannon({ url: `${t.origin}${t.path}`, method: 'POST', headers: { 'content-type': 'application/json', ...t.headers }, body: body(false), connections: 64, duration: SECONDS });
  return result.requests.average;
}

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'volt-bench-'));
  const s3cfg = { endpoint: '', accessKey: 'volt-bench', secretKey: 'volt-bench-secret', bucket: 'volt-bench', region: 'us-east-1' };
  const s3 = await startS3Server({ dataDir: dir, host: HOST, port: await freePort(HOST), accessKey: s3cfg.accessKey, secretKey: s3cfg.secretKey, region: s3cfg.region, bucket: s3cfg.bucket, detached: false });
  s3cfg.endpoint = s3.address;
  await createObjectStore(s3cfg).ensureBucket();
  try {
    const [up, pass, wal, direct, portkey] = (await Promise.all([1, 2, 3, 4, 5].map(() => freePort(HOST)))) as [number, number, number, number, number];
    const upstream = `http://${HOST}:${up}`;
    await spawnTarget(['upstream', String(up)]);
    await Promise.all([
      spawnTarget(['passthrough', String(pass), upstream]),
      spawnTarget(['volt', String(wal), upstream, 'wal', path.join(dir, 'wal'), JSON.stringify(s3cfg)]),
      spawnTarget(['volt', String(direct), upstream, 'direct', path.join(dir, 'direct'), JSON.stringify(s3cfg)]),
    ]);
    let portkeyOk = true;
    await spawnTarget(['portkey', String(portkey)]).catch((err: Error) => {
      portkeyOk = false;
      console.log(`note: Portkey skipped, it did not start on Node ${process.version}: ${err.message.slice(0, 200)}`);
    });
    const voltTarget = async (name: string, port: number) => {
      const admin = new GatewayAdminClient(`http://${HOST}:${port}`, 'bench-admin-key');
      const { token } = await admin.register({ runId: 'bench', iteration: 0, rolloutId: name, attempt: 0, mode: 'train', policyModel: 'policy' });
      return { target: { name, origin: `http://${HOST}:${port}`, path: `/r/${token}/v1/chat/completions`, headers: { authorization: `Bearer ${token}` } }, admin, token };
    };
    const voltWal = await voltTarget('volt-wal', wal);
    const voltDirect = await voltTarget('volt-s3', direct);
    const targets: Target[] = [
      { name: 'direct', origin: upstream, path: '/v1/chat/completions', headers: {} },
      { name: 'passthrough', origin: `http://${HOST}:${pass}`, path: '/v1/chat/completions', headers: {} },
      voltWal.target,
      voltDirect.target,
      ...(portkeyOk ? [{ name: 'portkey', origin: `http://${HOST}:${portkey}`, path: '/v1/chat/completions', headers: { 'x-portkey-provider': 'openai', 'x-portkey-custom-host': `${upstream}/v1`, authorization: 'Bearer bench' } }] : []),
    ];
    for (const t of targets) await load(t, 4); // warm-up: JIT, keep-alive sockets
    console.log(`\nGateway bench: ${os.cpus().length} CPUs (shared), Node ${process.version}, ${SECONDS}s per cell, mock upstream with a fixed 5-token answer`);
    console.log('volt-wal = Volt recording to fsync\'d WAL + background S3 upload (chosen); volt-s3 = Volt awaiting the S3 put per call\n');
    const results = new Map<string, Awaited<ReturnType<typeof load>>>();
    for (const c of [1, 16, 64]) {
      for (const t of targets) {
        const r = await load(t, c);
        results.set(`${t.name}@${c}`, r);
        if (r.errors) console.log(`  ${t.name} c=${c}: ${r.errors} non-200 answers`);
      }
    }
    const rps = new Map<string, number>();
    for (const t of targets) rps.set(t.name, await maxRps(t));
    const ttfbs = new Map<string, number>();
    for (const t of targets) ttfbs.set(t.name, await ttfb(t));

    const fmt = (n: number) => n.toFixed(3).padStart(8);
    const base = (c: number) => results.get(`direct@${c}`)!;
    console.log(`${'target'.padEnd(12)} ${[1, 16, 64].map((c) => `c=${c} p50 / p99 ms (added p50)`.padEnd(36)).join('')} max req/s  SSE TTFB ms (added)`);
    for (const t of targets) {
      const cells = [1, 16, 64].map((c) => {
        const r = results.get(`${t.name}@${c}`)!;
        return `${fmt(r.p50)} /${fmt(r.p99)} (${(r.p50 - base(c).p50).toFixed(3)})`.padEnd(36);
      });
      console.log(`${t.name.padEnd(12)} ${cells.join('')} ${rps.get(t.name)!.toFixed(0).padStart(8)}   ${fmt(ttfbs.get(t.name)!)} (${(ttfbs.get(t.name)! - ttfbs.get('direct')!).toFixed(3)})`);
    }
    const v = (k: string) => results.get(k)!;
    console.log('\nGoals (volt-wal):');
    console.log(`  added p50 at c=1: ${(v('volt-wal@1').p50 - v('direct@1').p50).toFixed(3)} ms (goal <= 0.5)`);
    if (portkeyOk) console.log(`  max req/s vs Portkey: ${(rps.get('volt-wal')! / rps.get('portkey')!).toFixed(2)}x (goal >= 3x)`);
    console.log(`  max req/s vs passthrough: ${((100 * rps.get('volt-wal')!) / rps.get('passthrough')!).toFixed(0)} % (goal >= 50 %)`);
    console.log(`  p99 at c=64 vs passthrough: ${(v('volt-wal@64').p99 / v('passthrough@64').p99).toFixed(2)}x (goal <= 2x)`);
    console.log(`  WAL vs direct-to-S3: max req/s ${(rps.get('volt-wal')! / rps.get('volt-s3')!).toFixed(2)}x, p50 at c=1 ${fmt(v('volt-wal@1').p50)} vs ${fmt(v('volt-s3@1').p50)} ms`);
    const t0 = performance.now();
    const closed = await voltWal.admin.close(voltWal.token);
    console.log(`  volt-wal: close (waits for every span to reach S3) took ${((performance.now() - t0) / 1000).toFixed(1)} s for ${closed.spans} spans`);
  } finally {
    for (const c of children) c.kill('SIGKILL');
    await stopProcess(s3, 5_000);
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

await main();
