/**
 * Two builds of the gateway side by side on one call size: `--before <checkout>` (its bench/gateway-targets.ts)
 * against this checkout, same mock upstream, interleaved rounds, medians and ratios (the shared machine's load lands
 * on both alike). Run: node --import tsx bench/gateway-ab.ts --before /path/to/old/checkout [--size agent] [--rounds 7] [--defer-mb N]
 * `--after-replica <id>` runs this checkout as a gateway replica (VOLT_GATEWAY_REPLICA_ID): `--before .` then measures
 * what sharing the registry and seqs through S3 costs.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { GatewayAdminClient } from '../src/gateway/admin-client.js';
import { freePort } from '../src/stack/ports.js';
import { stopProcess } from '../src/stack/processes.js';
import { loadEnv } from '../src/config/env.js';
import { cpuMs, drainUploads, load, startBenchS3, type Target, warmUp } from './gateway-load.js';
import { CALL_SIZES, requestBody, type CallSize } from './gateway-sizes.js';

const flag = (name: string, fallback: string) =>
  process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1]! : fallback;
const BEFORE = path.resolve(flag('--before', ''));
const SIZE = flag('--size', 'agent') as CallSize;
if (!CALL_SIZES.includes(SIZE) || !fs.existsSync(path.join(BEFORE, 'bench/gateway-targets.ts')))
  throw new Error('usage: --before <checkout with bench/gateway-targets.ts> [--size tiny|agent|long]');
const ROUNDS = Number(flag('--rounds', '7'));
const AFTER_REPLICA = flag('--after-replica', '');
const SECONDS = Number(flag('--seconds', '1'));
// Both builds defer the same bytes of uploads (this checkout's default unless --defer-mb), so the code is what differs.
const DEFER_MB = Number(flag('--defer-mb', String(loadEnv({}).VOLT_GATEWAY_UPLOAD_DEFER_MB)));
const HOST = '127.0.0.1';
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'volt-ab-'));
  const { s3, s3cfg } = await startBenchS3(dir);
  const children: ChildProcess[] = [];
  const start = async (cwd: string, args: string[]) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'bench/gateway-targets.ts', ...args], {
      cwd,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    children.push(child);
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    for (let i = 0; i < 300 && !out.includes('ready'); i++) await sleep(100);
    return child.pid!;
  };
  try {
    const up = await freePort(HOST);
    await start(process.cwd(), ['upstream', String(up), SIZE]);
    const builds = [
      ['before', BEFORE],
      ['after', process.cwd()],
    ] as const;
    const ports = [await freePort(HOST), await freePort(HOST)];
    const pids: number[] = [];
    for (const [i, [name, cwd]] of builds.entries()) {
      const replica = name === 'after' && AFTER_REPLICA ? [AFTER_REPLICA] : [];
      pids[i] = await start(cwd, [
        'volt',
        String(ports[i]),
        `http://${HOST}:${up}`,
        'wal',
        path.join(dir, name),
        JSON.stringify(s3cfg),
        'write',
        String(DEFER_MB * 1024 * 1024),
        ...replica,
      ]);
    }
    let n = 0;
    const target = async (i: number, c: number): Promise<Target> => {
      const admin = new GatewayAdminClient(`http://${HOST}:${ports[i]}`, 'bench-admin-key');
      const paths = await Promise.all(
        Array.from(
          { length: c },
          async () =>
            `/r/${(await admin.register({ runId: 'ab', iteration: 0, rolloutId: `ab-${n++}`, attempt: 0, mode: 'train', policyModel: 'policy' })).token}/v1/chat/completions`,
        ),
      );
      return {
        name: builds[i]![0],
        origin: `http://${HOST}:${ports[i]}`,
        paths,
        headers: { authorization: 'Bearer bench' },
        health: `http://${HOST}:${ports[i]}/healthz`,
      };
    };
    // Both builds warm (JIT, keep-alive sockets, the span encoder's worker thread) before any measured cell.
    const warm: string[] = [];
    for (const i of [0, 1]) {
      const w = await warmUp(() => target(i, 16), pids[i], requestBody(SIZE, false), requestBody(SIZE, true));
      warm.push(
        `${builds[i]![0]} ${w.calls} calls in ${w.seconds.toFixed(0)} s, CPU µs/call ${w.windows.map((x) => x.toFixed(0)).join(' → ')}`,
      );
    }
    console.log(
      `A/B ${SIZE}: load average ${os
        .loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')}, ${ROUNDS} interleaved rounds of ${SECONDS}s per cell; warm-up: ${warm.join('; ')}`,
    );
    for (const [label, stream, c] of [
      ['plain c=1', false, 1],
      ['plain c=64', false, 64],
      ['stream c=1', true, 1],
      ['stream c=64', true, 64],
    ] as const) {
      const rs: { p50: number; p99: number; rps: number }[][] = [[], []];
      // CPU per call of each build: its event-loop thread during the load, and all its threads over load + drain.
      const cpu = [
        { main: [] as number[], all: [] as number[] },
        { main: [] as number[], all: [] as number[] },
      ];
      for (let round = 0; round < ROUNDS; round++) {
        for (const i of round % 2 ? [1, 0] : [0, 1]) {
          const t = await target(i, c);
          const [main0, all0] = [cpuMs(pids[i], true), cpuMs(pids[i])];
          const r = await load(t, c, SECONDS, requestBody(SIZE, stream));
          const main1 = cpuMs(pids[i], true);
          await drainUploads(t);
          const all1 = cpuMs(pids[i]);
          rs[i]!.push(r);
          if (main0 !== null && main1 !== null && all0 !== null && all1 !== null) {
            cpu[i]!.main.push((1000 * (main1 - main0)) / r.requests);
            cpu[i]!.all.push((1000 * (all1 - all0)) / r.requests);
          }
        }
      }
      const m = rs.map((r) => ({
        p50: median(r.map((x) => x.p50)),
        p99: median(r.map((x) => x.p99)),
        rps: median(r.map((x) => x.rps)),
      }));
      const us = cpu.map((x) => (x.main.length ? { main: median(x.main), all: median(x.all) } : null));
      const cpuText =
        us[0] && us[1]
          ? ` | CPU us/call event loop ${us[0].main.toFixed(0)} -> ${us[1].main.toFixed(0)} (${(us[1].main / us[0].main).toFixed(2)}x), all threads incl. drain ${us[0].all.toFixed(0)} -> ${us[1].all.toFixed(0)} (${(us[1].all / us[0].all).toFixed(2)}x)`
          : '';
      console.log(
        `${label.padEnd(12)} before p50 ${m[0]!.p50.toFixed(2)} p99 ${m[0]!.p99.toFixed(2)} ms ${m[0]!.rps.toFixed(0)}/s | after p50 ${m[1]!.p50.toFixed(2)} p99 ${m[1]!.p99.toFixed(2)} ms ${m[1]!.rps.toFixed(0)}/s | after/before p50 ${(m[1]!.p50 / m[0]!.p50).toFixed(2)}x, req/s ${(m[1]!.rps / m[0]!.rps).toFixed(2)}x${cpuText}`,
      );
    }
    console.log(
      `load average now ${os
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
