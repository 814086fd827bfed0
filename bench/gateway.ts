/**
 * Gateway overhead, side by side: direct to a mock upstream, through Volt (WAL durability in its sync modes, and
 * direct-to-S3 durability), through Portkey, and through a bare undici passthrough (the floor), at one call size
 * (bench/gateway-sizes.ts: tiny, agent, long), plain and streamed. Figures are printed, not asserted.
 * Run: node --import tsx bench/gateway.ts [--size tiny|agent|long] [--seconds 3] [--rounds 3] [--defer-mb N (default: the gateway's)]
 * [--warmup 40: most seconds of each target's plain warm-up, half that streamed]
 * The Responses and Messages endpoints beside chat, through the same gateway and mock upstream: bench/agent-apis.ts.
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
import { keys } from '../src/storage/keys.js';
import type { ObjectStore } from '../src/storage/object-store.js';
import { readSpans } from '../src/storage/spans.js';
import { cpuMs, drainUploads, load, maxRps, startBenchS3, type Target, ttfb, warmUp } from './gateway-load.js';
import { CALL_SIZES, requestBody, type CallSize } from './gateway-sizes.js';

const arg = (name: string, fallback: number) =>
  process.argv.includes(name) ? Number(process.argv[process.argv.indexOf(name) + 1]) || fallback : fallback;
const SECONDS = arg('--seconds', 3);
const ROUNDS = Math.max(1, Math.round(arg('--rounds', 3)));
const WARMUP_S = arg('--warmup', 40);
const SIZE = (process.argv.includes('--size') ? process.argv[process.argv.indexOf('--size') + 1] : 'tiny') as CallSize;
if (!CALL_SIZES.includes(SIZE)) throw new Error(`--size must be one of ${CALL_SIZES.join(', ')}`);
const PLAIN = requestBody(SIZE, false);
const STREAMED = requestBody(SIZE, true);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const HOST = '127.0.0.1';
const DEFER_MB = process.argv.includes('--defer-mb')
  ? Number(process.argv[process.argv.indexOf('--defer-mb') + 1])
  : loadEnv({}).VOLT_GATEWAY_UPLOAD_DEFER_MB;
if (!Number.isInteger(DEFER_MB) || DEFER_MB < 0) throw new Error('--defer-mb must be a whole number of MiB, 0 or more');
const children: ChildProcess[] = [];
/** Bench target name -> pid of the process serving it (for its CPU time). */
const pids = new Map<string, number>();

/** Volt variants: [name, durability, WAL sync, upload defer bytes]; the first is the default configuration. */
const VOLTS: [string, 'wal' | 'direct', 'write' | 'fsync', number][] = [
  ['volt', 'wal', 'write', DEFER_MB * 1024 * 1024],
  ['volt-upl-now', 'wal', 'write', 0],
  ['volt-fsync', 'wal', 'fsync', DEFER_MB * 1024 * 1024],
  ['volt-s3', 'direct', 'write', 0],
];

async function spawnTarget(name: string, args: string[]): Promise<void> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/gateway-targets.ts', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  pids.set(name, child.pid!);
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

/** Bytes per span of one of the default Volt's c=1 rollouts: as stored in S3 and as whole JSON spans (before compact spans). */
async function spanBytes(store: ObjectStore): Promise<void> {
  const ref = { runId: 'bench', iteration: 0, rolloutId: `volt-c1-0-0`, attempt: 0 };
  let stored = 0;
  for await (const o of store.list(keys.spans(ref))) stored += o.size;
  let spans = 0;
  let whole = 0;
  for await (const span of readSpans(store, ref)) {
    spans++;
    whole += JSON.stringify(span).length;
  }
  if (spans)
    console.log(
      `\nspan bytes (${spans} spans of ${ref.rolloutId}): ${(stored / spans).toFixed(0)} in S3 (compressed segments), ${(whole / spans).toFixed(0)} as whole JSON spans (the format before compact spans)`,
    );
}

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'volt-bench-'));
  const { s3, s3cfg, store } = await startBenchS3(dir);
  try {
    const [up, pass, portkey] = (await Promise.all([1, 2, 3].map(() => freePort(HOST)))) as [number, number, number];
    const upstream = `http://${HOST}:${up}`;
    await spawnTarget('direct', ['upstream', String(up), SIZE]);
    const voltPorts = await Promise.all(VOLTS.map(() => freePort(HOST)));
    await Promise.all([
      spawnTarget('passthrough', ['passthrough', String(pass), upstream]),
      ...VOLTS.map(([name, durability, sync, deferred], i) =>
        spawnTarget(name, [
          'volt',
          String(voltPorts[i]),
          upstream,
          durability,
          path.join(dir, name),
          JSON.stringify(s3cfg),
          sync,
          String(deferred),
        ]),
      ),
    ]);
    let portkeyOk = true;
    await spawnTarget('portkey', ['portkey', String(portkey)]).catch((err: Error) => {
      portkeyOk = false;
      console.log(`note: Portkey skipped, it did not start on Node ${process.version}: ${err.message.slice(0, 200)}`);
    });
    const admins = new Map(
      VOLTS.map(([name], i) => [name, new GatewayAdminClient(`http://${HOST}:${voltPorts[i]}`, 'bench-admin-key')]),
    );
    const tokens = new Map<string, string>();
    // Fresh rollouts per Volt cell, one per connection: real rollouts hold tens of spans (and rclone's PUT slows down
    // as one prefix fills up).
    const cell = async (t: Target, label: string, connections: number): Promise<Target> => {
      const admin = admins.get(t.name);
      if (!admin) return t;
      const paths = await Promise.all(
        Array.from({ length: connections }, async (_, i) => {
          const { token } = await admin.register({
            runId: 'bench',
            iteration: 0,
            rolloutId: `${t.name}-${label}-${i}`,
            attempt: 0,
            mode: 'train',
            policyModel: 'policy',
          });
          tokens.set(`${t.name}-${label}-${i}`, token);
          return `/r/${token}/v1/chat/completions`;
        }),
      );
      return { ...t, paths };
    };
    const volts = VOLTS.map(([name], i): Target => ({
      name,
      origin: `http://${HOST}:${voltPorts[i]}`,
      paths: [],
      headers: { authorization: 'Bearer bench' },
      health: `http://${HOST}:${voltPorts[i]}/healthz`,
    }));
    const targets: Target[] = [
      { name: 'direct', origin: upstream, paths: ['/v1/chat/completions'], headers: {} },
      { name: 'passthrough', origin: `http://${HOST}:${pass}`, paths: ['/v1/chat/completions'], headers: {} },
      ...volts,
      ...(portkeyOk
        ? [
            {
              name: 'portkey',
              origin: `http://${HOST}:${portkey}`,
              paths: ['/v1/chat/completions'],
              headers: {
                'x-portkey-provider': 'openai',
                'x-portkey-custom-host': `${upstream}/v1`,
                authorization: 'Bearer bench',
              },
            },
          ]
        : []),
    ];
    // Every target warm before any cell (JIT, keep-alive sockets, the encoder thread): gateway-load.ts's warmUp.
    const warm: string[] = [];
    for (const t of targets) {
      const w = await warmUp((label) => cell(t, label, 16), pids.get(t.name), PLAIN, STREAMED, { maxS: WARMUP_S });
      warm.push(
        `${t.name} ${w.calls} calls in ${w.seconds.toFixed(0)} s, CPU µs/call ${w.windows.map((x) => x.toFixed(0)).join(' → ')}`,
      );
    }
    console.log(
      `\nGateway bench: ${os.cpus().length} CPUs (shared), load average ${os
        .loadavg()
        .map((l) => l.toFixed(1))
        .join(
          ' ',
        )}, Node ${process.version}, ${SECONDS}s per cell (latency cells: median of ${ROUNDS} interleaved slices; max req/s: median of ${ROUNDS} interleaved slices of ${SECONDS}s), call size ${SIZE}: ${PLAIN.length} B request, mock upstream answering ${JSON.stringify(SIZE === 'tiny' ? '24 prompt ids, 5 tokens' : SIZE === 'agent' ? '2,000 prompt ids, 256 tokens with logprobs' : '8,000 prompt ids, 256 tokens with logprobs')}`,
    );
    console.log(
      `volt = default: WAL durable once write(2) returns (fdatasync in the background within 100 ms), up to ${DEFER_MB} MiB of span uploads wait while calls are in flight`,
    );
    console.log(
      'volt-upl-now = same, uploading at once (a segment holds what queued meanwhile); volt-fsync = fdatasync before responding; volt-s3 = awaiting the S3 put per call',
    );
    console.log(
      'CPU us/call = CPU time of the process serving the target (for direct: the mock upstream) per call of the max req/s cell, all threads; [its event-loop thread alone].',
    );
    console.log(
      `Warm-up per target (c=16, 2 s windows of plain calls until CPU per call settles, then streamed): ${warm.join('; ')}`,
    );
    console.log(
      'Each Volt cell uses fresh rollouts (one per connection) and is followed by waiting for its uploads to drain (no upload runs while another target is measured).\n',
    );
    // Latency cells run in ROUNDS interleaved slices (every target once per round), and report the median slice, so a
    // burst of noise on the shared machine lands on one slice of every target rather than on one target's whole cell.
    const results = new Map<string, { p50: number; p99: number }>();
    const drains = new Map<string, number>();
    // Streamed cells (`sse@c`) time each call to its last byte.
    for (const [c, kind, body] of [
      [1, '', PLAIN],
      [16, '', PLAIN],
      [64, '', PLAIN],
      [1, 'sse', STREAMED],
      [64, 'sse', STREAMED],
    ] as const) {
      const at = `${kind}${c}`;
      const slices = new Map<string, Awaited<ReturnType<typeof load>>[]>(targets.map((t) => [t.name, []]));
      for (let round = 0; round < ROUNDS; round++) {
        for (const t of targets) {
          const r = await load(await cell(t, `c${at}-${round}`, c), c, SECONDS / ROUNDS, body);
          slices.get(t.name)!.push(r);
          drains.set(`${t.name}@${at}`, Math.max(drains.get(`${t.name}@${at}`) ?? 0, await drainUploads(t)));
          if (r.errors) console.log(`  ${t.name} ${kind || 'c'}=${c}: ${r.errors} non-200 answers`);
        }
      }
      for (const [name, rs] of slices)
        results.set(`${name}@${at}`, { p50: median(rs.map((r) => r.p50)), p99: median(rs.map((r) => r.p99)) });
    }
    // Max req/s too runs in ROUNDS interleaved slices (median slice), so a slow stretch of the shared machine does
    // not land on one target's whole cell; each slice is SECONDS long (a sustained rate: past Volt's upload deferral
    // bound its uploads run during the load), and CPU per call is over all its slices.
    const rpsSlices = new Map<string, number[]>(targets.map((t) => [t.name, []]));
    const sustainedSlices = new Map<string, number[]>(targets.map((t) => [t.name, []]));
    const cpuSums = new Map<string, [number, number, number, number] | null>(
      targets.map((t) => [t.name, [0, 0, 0, 0]]),
    );
    for (let round = 0; round < ROUNDS; round++) {
      for (const t of targets) {
        const ready = await cell(t, round === 0 ? 'max' : `max${round}`, 64);
        const before = cpuMs(pids.get(t.name));
        const beforeMain = cpuMs(pids.get(t.name), true);
        const r = await maxRps(ready, SECONDS, PLAIN);
        const during = cpuMs(pids.get(t.name));
        const duringMain = cpuMs(pids.get(t.name), true);
        rpsSlices.get(t.name)!.push(r.rps);
        // Requests over load time plus the time their spans took to reach S3 afterwards.
        sustainedSlices.get(t.name)!.push(r.requests / (SECONDS + (await drainUploads(t))));
        const after = cpuMs(pids.get(t.name));
        const sums = cpuSums.get(t.name);
        if (!sums || before === null || during === null || after === null) cpuSums.set(t.name, null);
        else
          cpuSums.set(t.name, [
            sums[0] + during - before,
            sums[1] + after - before,
            sums[2] + duringMain! - beforeMain!,
            sums[3] + r.requests,
          ]);
      }
    }
    const rps = new Map([...rpsSlices].map(([name, xs]) => [name, median(xs)]));
    const sustained = new Map([...sustainedSlices].map(([name, xs]) => [name, median(xs)]));
    const cpu = new Map(
      [...cpuSums].map(([name, c]): [string, [number, number, number] | null] => [
        name,
        c && [(1000 * c[0]) / c[3], (1000 * c[1]) / c[3], (1000 * c[2]) / c[3]],
      ]),
    );
    const ttfbs = new Map<string, number>();
    for (const t of targets) {
      ttfbs.set(t.name, await ttfb(await cell(t, 'sse', 1), STREAMED));
      await drainUploads(t);
    }

    const fmt = (n: number) => n.toFixed(3).padStart(8);
    const base = (c: number) => results.get(`direct@${c}`)!;
    console.log(
      `${'target'.padEnd(13)}${[1, 16, 64].map((c) => `c=${c} p50 / p99 ms (added p50)`.padEnd(36)).join('')} max req/s  incl. drain  SSE TTFB ms (added)  CPU us/call (incl. drain) [event-loop thread]`,
    );
    for (const t of targets) {
      const cells = [1, 16, 64].map((c) => {
        const r = results.get(`${t.name}@${c}`)!;
        return `${fmt(r.p50)} /${fmt(r.p99)} (${(r.p50 - base(c).p50).toFixed(3)})`.padEnd(36);
      });
      const c = cpu.get(t.name);
      const cpuCell = c ? `${c[0].toFixed(0).padStart(6)} (${c[1].toFixed(0)}) [${c[2].toFixed(0)}]` : '   n/a';
      console.log(
        `${t.name.padEnd(13)}${cells.join('')} ${rps.get(t.name)!.toFixed(0).padStart(8)} ${sustained.get(t.name)!.toFixed(0).padStart(12)}   ${fmt(ttfbs.get(t.name)!)} (${(ttfbs.get(t.name)! - ttfbs.get('direct')!).toFixed(3)})  ${cpuCell}`,
      );
    }
    console.log(
      `\n${'streamed'.padEnd(13)}${['sse1', 'sse64'].map((at) => `${at.replace('sse', 'c=')} p50 / p99 ms to the last byte`.padEnd(36)).join('')}`,
    );
    for (const t of targets)
      console.log(
        `${t.name.padEnd(13)}${['sse1', 'sse64'].map((at) => `${fmt(results.get(`${t.name}@${at}`)!.p50)} /${fmt(results.get(`${t.name}@${at}`)!.p99)}`.padEnd(36)).join('')}`,
      );
    const drainLine = volts.map(
      ({ name }) =>
        `${name} ${['1', '16', '64', 'sse1', 'sse64'].map((at) => drains.get(`${name}@${at}`)!.toFixed(1)).join('/')}`,
    );
    console.log(`\nupload drain after the c=1/16/64/sse1/sse64 cells, s: ${drainLine.join(', ')}`);
    const v = (k: string) => results.get(k)!;
    const added = (name: string) => v(`${name}@1`).p50 - v('direct@1').p50;
    for (const name of ['volt', 'volt-upl-now', 'volt-fsync']) {
      console.log(`\nGoals (${name}):`);
      console.log(
        `  added p50 at c=1: ${added(name).toFixed(3)} ms (tiny-call goal <= 0.5; passthrough adds ${added('passthrough').toFixed(3)}); over the passthrough ${(added(name) - added('passthrough')).toFixed(3)} ms (agent-sized goal <= 1)`,
      );
      if (portkeyOk)
        console.log(
          `  max req/s vs Portkey: ${(rps.get(name)! / rps.get('portkey')!).toFixed(2)}x (goal >= 3x; incl. drain ${(sustained.get(name)! / rps.get('portkey')!).toFixed(2)}x)`,
        );
      console.log(
        `  max req/s vs passthrough: ${((100 * rps.get(name)!) / rps.get('passthrough')!).toFixed(0)} % (goal >= 50 %; incl. drain ${((100 * sustained.get(name)!) / rps.get('passthrough')!).toFixed(0)} %)`,
      );
      console.log(
        `  p99 at c=64 vs passthrough: ${(v(`${name}@64`).p99 / v('passthrough@64').p99).toFixed(2)}x (goal <= 2x)`,
      );
    }
    const t0 = performance.now();
    const closed = await admins.get('volt')!.close(tokens.get('volt-max-0')!);
    const took = (performance.now() - t0) / 1000;
    let objects = 0;
    for await (const _o of store.list(
      keys.spans({ runId: 'bench', iteration: 0, rolloutId: 'volt-max-0', attempt: 0 }),
    ))
      objects++;
    await spanBytes(store);
    console.log(
      `\nvolt: closing one max req/s rollout took ${took.toFixed(2)} s (${closed.spans} spans in S3 in ${objects} object(s)); load average now ${os
        .loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')}`,
    );
  } finally {
    for (const c of children) c.kill('SIGKILL');
    await stopProcess(s3, 5_000);
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

await main();
