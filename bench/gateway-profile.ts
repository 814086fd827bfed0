/**
 * CPU profile of the gateway on one call size: the mock upstream and a default Volt gateway (WAL, write mode) in
 * their own processes, the gateway under `node --cpu-prof`, `--seconds` of closed-loop load at `--connections`, then
 * the top functions by self time and the src/ functions by inclusive time, for each of its threads (the event loop, the
 * module loader, the span encoder's worker: SIGTERM closes the gateway cleanly, so every profile is written). The
 * .cpuprofile files stay in --out.
 * Run: node --import tsx bench/gateway-profile.ts [--target volt|passthrough] [--size agent] [--stream] [--seconds 8] [--connections 16] [--out dir]
 * [--autocannon: the load of bench/gateway.ts's max req/s cell, 64 connections cycling through the rollouts]
 * [--warmup 40: most seconds of plain warm-up before the profiled load (0: none); only the load's samples are reported]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadEnv } from '../src/config/env.js';
import { GatewayAdminClient } from '../src/gateway/admin-client.js';
import { freePort } from '../src/stack/ports.js';
import { stopProcess } from '../src/stack/processes.js';
import { drainUploads, load, maxRps, rolloutPaths, startBenchS3, warmUp } from './gateway-load.js';
import { CALL_SIZES, requestBody, type CallSize } from './gateway-sizes.js';

const flag = (name: string, fallback: string) =>
  process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1]! : fallback;
const SIZE = flag('--size', 'agent') as CallSize;
if (!CALL_SIZES.includes(SIZE)) throw new Error(`--size must be one of ${CALL_SIZES.join(', ')}`);
const SECONDS = Number(flag('--seconds', '8'));
const CONNECTIONS = Number(flag('--connections', '16'));
const OUT = path.resolve(flag('--out', fs.mkdtempSync(path.join(os.tmpdir(), 'volt-prof-'))));
const HOST = '127.0.0.1';
const TARGET = flag('--target', 'volt');
const WARMUP_S = Number(flag('--warmup', '40'));
if (TARGET !== 'volt' && TARGET !== 'passthrough') throw new Error('--target must be volt or passthrough');

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount: number;
  children?: number[];
}

/**
 * Self and inclusive time per function over the samples taken in `window` (µs on the monotonic clock, which
 * process.hrtime and V8's profiler share on Linux): the measured load only, not start-up or warm-up.
 */
function report(file: string, calls: number, window: { from: number; to: number }): void {
  const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as {
    nodes: ProfileNode[];
    startTime: number;
    samples: number[];
    timeDeltas: number[];
  };
  const hits = new Map<number, number>();
  let at = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    at += profile.timeDeltas[i]!;
    if (at >= window.from && at <= window.to) hits.set(profile.samples[i]!, (hits.get(profile.samples[i]!) ?? 0) + 1);
  }
  const nodes = profile.nodes.map((n) => ({ ...n, hitCount: hits.get(n.id) ?? 0 }));
  const [startTime, endTime] = [window.from, window.to];
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const where = (n: ProfileNode) =>
    `${n.callFrame.functionName || '(anonymous)'} ${n.callFrame.url.split('/').slice(-2).join('/')}:${n.callFrame.lineNumber + 1}`;
  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  let total = 0;
  for (const n of nodes) {
    total += n.hitCount;
    self.set(where(n), (self.get(where(n)) ?? 0) + n.hitCount);
    if (!n.hitCount) continue;
    const seen = new Set<string>();
    for (let id: number | undefined = n.id; id !== undefined; id = parent.get(id)) {
      const m = byId.get(id)!;
      if (!m.callFrame.url.includes('/src/') || seen.has(where(m))) continue;
      seen.add(where(m));
      inclusive.set(where(m), (inclusive.get(where(m)) ?? 0) + n.hitCount);
    }
  }
  // A function's share of the profile's wall time over the calls. The sampler ticks on wall time, so on a loaded machine
  // a thread's descheduled time lands on what it was running: compare shares, take CPU µs from bench/gateway-ab.ts.
  if (total === 0) {
    console.log('no samples in the load window');
    return;
  }
  const usPerSample = (endTime - startTime) / total;
  const busy = total - (self.get('(idle) :0') ?? 0);
  const line = ([k, v]: [string, number]) =>
    `${((100 * v) / total).toFixed(1).padStart(6)} % ${((v * usPerSample) / calls).toFixed(0).padStart(6)} wall µs/call  ${k}`;
  const top = (m: Map<string, number>) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 20)
      .map(line)
      .join('\n');
  console.log(
    `${total} samples over the ${((endTime - startTime) / 1e6).toFixed(1)} s of load, busy ${((busy * usPerSample) / calls).toFixed(0)} wall µs/call (${calls} calls)\n-- self time\n${top(self)}\n-- inclusive time, src/ functions\n${top(inclusive)}`,
  );
}

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'volt-prof-data-'));
  const { s3, s3cfg } = await startBenchS3(dir);
  const children: ChildProcess[] = [];
  const start = async (nodeFlags: string[], args: string[]) => {
    const child = spawn(process.execPath, [...nodeFlags, '--import', 'tsx', 'bench/gateway-targets.ts', ...args], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    children.push(child);
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    for (let i = 0; i < 300 && !out.includes('ready'); i++) await sleep(100);
    return child;
  };
  try {
    const [up, gw] = [await freePort(HOST), await freePort(HOST)];
    await start([], ['upstream', String(up), SIZE]);
    // SIGTERM closes the gateway and exits normally (gateway-targets.ts), so --cpu-prof writes every thread's profile.
    const prof = ['--cpu-prof', `--cpu-prof-dir=${OUT}`];
    const gateway =
      TARGET === 'passthrough'
        ? await start(prof, ['passthrough', String(gw), `http://${HOST}:${up}`])
        : await start(prof, [
            'volt',
            String(gw),
            `http://${HOST}:${up}`,
            'wal',
            path.join(dir, 'gw'),
            JSON.stringify(s3cfg),
            'write',
            String(loadEnv({}).VOLT_GATEWAY_UPLOAD_DEFER_MB * 1024 * 1024),
          ]);
    const admin = new GatewayAdminClient(`http://${HOST}:${gw}`, 'bench-admin-key');
    const paths =
      TARGET === 'passthrough' ? ['/v1/chat/completions'] : await rolloutPaths(admin, 'prof', 'p', CONNECTIONS);
    const target = {
      name: TARGET,
      origin: `http://${HOST}:${gw}`,
      paths,
      headers: { authorization: 'Bearer bench' },
      health: TARGET === 'volt' ? `http://${HOST}:${gw}/healthz` : undefined,
    };
    const body = requestBody(SIZE, process.argv.includes('--stream'));
    // Warm first (V8 optimises the gateway's code over its first ~10,000 calls), then profile the load alone.
    const fresh = async (label: string) =>
      TARGET === 'volt' ? { ...target, paths: await rolloutPaths(admin, 'prof', label, 16) } : target;
    const warm =
      WARMUP_S > 0
        ? await warmUp(fresh, gateway.pid, requestBody(SIZE, false), requestBody(SIZE, true), { maxS: WARMUP_S })
        : null;
    if (warm)
      console.log(
        `warm-up: ${warm.calls} calls in ${warm.seconds.toFixed(0)} s, CPU µs/call ${warm.windows.map((x) => x.toFixed(0)).join(' → ')}`,
      );
    const window = { from: Number(process.hrtime.bigint() / 1000n), to: 0 };
    const r = process.argv.includes('--autocannon')
      ? { ...(await maxRps(target, SECONDS, body)), p50: NaN, p99: NaN, errors: 0 }
      : await load(target, CONNECTIONS, SECONDS, body);
    await drainUploads(target);
    window.to = Number(process.hrtime.bigint() / 1000n);
    console.log(
      `load average ${os
        .loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')}; ${r.requests} calls, p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms, ${r.errors} errors`,
    );
    gateway.kill('SIGTERM');
    await new Promise((resolve) => gateway.once('exit', resolve));
    // CPU.<date>.<time>.<pid>.<thread>.<n>.cpuprofile: thread 0 is the event loop, the others the module loader and
    // the span encoder's worker; each is reported with the calls it served, so a sample count reads as µs per call.
    const files = fs
      .readdirSync(OUT)
      .filter((f) => f.endsWith('.cpuprofile') && f.includes(`.${gateway.pid}.`))
      .sort();
    if (!files.some((f) => /\.0\.\d+\.cpuprofile$/.test(f))) throw new Error(`no event-loop .cpuprofile in ${OUT}`);
    for (const f of files) {
      console.log(`\n== profile: ${path.join(OUT, f)} (thread ${f.split('.').at(-3)})`);
      report(path.join(OUT, f), r.requests, window);
    }
  } finally {
    for (const c of children) c.kill('SIGKILL');
    await stopProcess(s3, 5_000);
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

await main();
