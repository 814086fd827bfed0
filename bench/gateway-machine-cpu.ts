/**
 * Where a call's CPU goes on the whole machine, not only in the gateway: for the bare passthrough and for Volt
 * gateways that defer different amounts of uploads (--defer-mb, one gateway per value), closed-loop load at c=64
 * (undici, as bench/gateway.ts's latency cells; `--autocannon` for its max req/s cell), and per call the CPU of the
 * target, the mock upstream, the S3 server (span uploads), the load generator (this process) and the whole machine
 * (/proc/stat), each slice followed by the uploads' drain, which its CPU includes. Interleaved rounds; every slice
 * printed, then medians. Run: node --import tsx bench/gateway-machine-cpu.ts [--size agent] [--defer-mb 32,128]
 * [--rounds 4] [--seconds 4] [--connections 64 (the undici closed loop's)] [--autocannon]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { GatewayAdminClient } from '../src/gateway/admin-client.js';
import { freePort } from '../src/stack/ports.js';
import { stopProcess } from '../src/stack/processes.js';
import { cpuMs, drainUploads, load, maxRps, rolloutPaths, startBenchS3, type Target, warmUp } from './gateway-load.js';
import { CALL_SIZES, requestBody, type CallSize } from './gateway-sizes.js';

const flag = (name: string, fallback: string) =>
  process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1]! : fallback;
const SIZE = flag('--size', 'agent') as CallSize;
if (!CALL_SIZES.includes(SIZE)) throw new Error(`--size must be one of ${CALL_SIZES.join(', ')}`);
const CONNECTIONS = Number(flag('--connections', '64'));
if (!Number.isInteger(CONNECTIONS) || CONNECTIONS < 1)
  throw new Error('--connections must be a whole number, 1 or more');
const DEFERS = flag('--defer-mb', '32,128').split(',').map(Number);
if (DEFERS.some((d) => !Number.isInteger(d) || d < 0))
  throw new Error('--defer-mb: comma-separated whole MiB, 0 or more');
const ROUNDS = Number(flag('--rounds', '4'));
const SECONDS = Number(flag('--seconds', '4'));
const AUTOCANNON = process.argv.includes('--autocannon');
const HOST = '127.0.0.1';
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** CPU milliseconds of the whole machine so far, busy and all (/proc/stat's first line, 10 ms ticks). */
function machineMs(): { busy: number; all: number } {
  const f = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0]!.split(/\s+/).slice(1).map(Number);
  const [user, nice, system, idle, iowait, irq, softirq, steal] = f as [
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  return {
    busy: (user + nice + system + irq + softirq + steal) * 10,
    all: (user + nice + system + idle + iowait + irq + softirq + steal) * 10,
  };
}
const selfMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'volt-machine-cpu-'));
  const { s3, s3cfg } = await startBenchS3(dir);
  const children: ChildProcess[] = [];
  const start = async (args: string[]) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'bench/gateway-targets.ts', ...args], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    children.push(child);
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    for (let i = 0; i < 300 && !out.includes('ready'); i++) await sleep(100);
    if (!out.includes('ready')) throw new Error(`bench target ${args[0]} not ready`);
    return child;
  };
  try {
    const up = await freePort(HOST);
    const upstream = await start(['upstream', String(up), SIZE]);
    const pass = await freePort(HOST);
    const targets: { target: Target; pid: number; admin?: GatewayAdminClient }[] = [
      {
        target: { name: 'passthrough', origin: `http://${HOST}:${pass}`, paths: ['/v1/chat/completions'], headers: {} },
        pid: (await start(['passthrough', String(pass), `http://${HOST}:${up}`])).pid!,
      },
    ];
    for (const mb of DEFERS) {
      const port = await freePort(HOST);
      const child = await start([
        'volt',
        String(port),
        `http://${HOST}:${up}`,
        'wal',
        path.join(dir, `volt-${mb}`),
        JSON.stringify(s3cfg),
        'write',
        String(mb * 1024 * 1024),
      ]);
      const origin = `http://${HOST}:${port}`;
      targets.push({
        target: {
          name: `volt-defer-${mb}`,
          origin,
          paths: [],
          headers: { authorization: 'Bearer bench' },
          health: `${origin}/healthz`,
        },
        pid: child.pid!,
        admin: new GatewayAdminClient(origin, 'bench-admin-key'),
      });
    }
    // Every target warm before any slice (JIT, keep-alive sockets, the encoder thread): gateway-load.ts's warmUp.
    for (const { target, pid, admin } of targets) {
      const fresh = async (label: string) =>
        admin ? { ...target, paths: await rolloutPaths(admin, 'cpu', label, 16) } : target;
      const w = await warmUp(fresh, pid, requestBody(SIZE, false), requestBody(SIZE, true));
      console.log(
        `warm-up ${target.name}: ${w.calls} calls in ${w.seconds.toFixed(0)} s, CPU µs/call ${w.windows.map((x) => x.toFixed(0)).join(' → ')}`,
      );
    }
    console.log(
      `machine CPU per call: ${os.cpus().length} CPUs, load average ${os
        .loadavg()
        .map((l) => l.toFixed(1))
        .join(
          ' ',
        )}, size ${SIZE}, c=${AUTOCANNON ? 64 : CONNECTIONS} ${AUTOCANNON ? 'autocannon' : 'undici closed loop'}, ${ROUNDS} interleaved rounds of ${SECONDS}s, each slice incl. its upload drain`,
    );
    const rows = new Map<string, number[][]>();
    for (let round = 0; round < ROUNDS; round++) {
      for (const { target, pid, admin } of targets) {
        // Fresh rollouts per slice, one per connection (like one agent each).
        const paths = admin
          ? await Promise.all(
              Array.from(
                { length: AUTOCANNON ? 64 : CONNECTIONS },
                async (_, i) =>
                  `/r/${(await admin.register({ runId: 'cpu', iteration: 0, rolloutId: `${round}-${i}`, attempt: 0, mode: 'train', policyModel: 'policy' })).token}/v1/chat/completions`,
              ),
            )
          : target.paths;
        const t = { ...target, paths };
        const before = [cpuMs(pid)!, cpuMs(upstream.pid)!, cpuMs(s3.pid)!, selfMs(), machineMs()] as const;
        const r = AUTOCANNON
          ? { ...(await maxRps(t, SECONDS, requestBody(SIZE, false))), p50: NaN, p99: NaN }
          : await load(t, CONNECTIONS, SECONDS, requestBody(SIZE, false));
        await drainUploads(t);
        const after = [cpuMs(pid)!, cpuMs(upstream.pid)!, cpuMs(s3.pid)!, selfMs(), machineMs()] as const;
        const per = (ms: number) => (1000 * ms) / r.requests;
        const row = [
          r.rps,
          r.p50,
          r.p99,
          per(after[0] - before[0]),
          per(after[1] - before[1]),
          per(after[2] - before[2]),
          per(after[3] - before[3]),
          per(after[4].busy - before[4].busy),
          per(after[4].all - before[4].all),
        ];
        rows.set(target.name, [...(rows.get(target.name) ?? []), row]);
        console.log(line(`${target.name} #${round + 1}`, row));
      }
    }
    console.log('medians:');
    for (const [name, rs] of rows)
      console.log(
        line(
          name,
          rs[0]!.map((_, i) => median(rs.map((r) => r[i]!))),
        ),
      );
  } finally {
    for (const c of children) c.kill('SIGKILL');
    await stopProcess(s3, 5_000);
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function line(name: string, [rps, p50, p99, target, upstream, s3, loadgen, busy, all]: number[]): string {
  const us = (n: number | undefined) => n!.toFixed(0).padStart(4);
  const lat = Number.isNaN(p50) ? '' : ` p50 ${p50!.toFixed(1)} p99 ${p99!.toFixed(1)} ms`;
  return `${name.padEnd(20)} ${rps!.toFixed(0).padStart(6)} req/s${lat} | CPU µs/call: target ${us(target)}, upstream ${us(upstream)}, S3 ${us(s3)}, load generator ${us(loadgen)}; machine busy ${us(busy)} of ${us(all)}`;
}

await main();
