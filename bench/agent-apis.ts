/**
 * The Responses and Messages endpoints beside chat completions, side by side in one run: added p50 latency at c=1
 * (whole answer read, plain and streamed) over the mock upstream called directly, and max req/s at c=32, through one
 * Volt gateway (default WAL durability). Latency cells run in interleaved rounds (median of the round medians), so
 * noise on the shared machine lands on every cell alike. Figures are printed, not asserted.
 * Run: node --import tsx bench/agent-apis.ts [--seconds 2] [--rounds 5]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { translateMessages, translateResponses } from '../src/gateway/agent-apis/translated-call.js';
import { GatewayAdminClient } from '../src/gateway/admin-client.js';
import { chatRequestSchema, parseBody } from '../src/gateway/routes/request-schema.js';
import { freePort } from '../src/stack/ports.js';
import { stopProcess } from '../src/stack/processes.js';
import { startBenchS3 } from './gateway-load.js';

const arg = (name: string, fallback: number) =>
  process.argv.includes(name) ? Number(process.argv[process.argv.indexOf(name) + 1]) || fallback : fallback;
const SECONDS = arg('--seconds', 2);
const ROUNDS = Math.max(1, Math.round(arg('--rounds', 5)));
const HOST = '127.0.0.1';
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const children: ChildProcess[] = [];

const ask = 'What is the answer?';
/** Each API's smallest real request, as its SDK sends it. */
const BODIES = {
  chat: (stream: boolean) => ({
    path: 'v1/chat/completions',
    body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: ask }], stream },
  }),
  responses: (stream: boolean) => ({ path: 'v1/responses', body: { model: 'gpt-4.1', input: ask, stream } }),
  messages: (stream: boolean) => ({
    path: 'v1/messages',
    body: { model: 'claude-x', max_tokens: 16, messages: [{ role: 'user', content: ask }], stream },
  }),
} as const;
type Api = keyof typeof BODIES;

async function spawnTarget(args: string[]): Promise<void> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/gateway-targets.ts', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  for (let i = 0; i < 600; i++) {
    if (out.includes('ready')) return;
    if (child.exitCode !== null) throw new Error(`bench target ${args[0]} exited: ${out}`);
    await sleep(100);
  }
  throw new Error(`bench target ${args[0]} not ready: ${out}`);
}

/** A path under `/r/<token>/` and the key an SDK would send with it (the rollout token, as a bearer). */
type Call = { path: string; key: string };

/** Closed loop: `concurrency` workers send back to back for `seconds`; each answer is read to its end. */
async function load(origin: string, calls: Call[], body: string, concurrency: number, seconds: number) {
  const pool = new Pool(origin, { connections: concurrency, keepAliveTimeout: 60_000 });
  const latencies: number[] = [];
  let errors = 0;
  const end = performance.now() + seconds * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async (_, i) => {
      while (performance.now() < end) {
        const t0 = performance.now();
        const call = calls[i % calls.length]!;
        const res = await pool.request({
          method: 'POST',
          path: call.path,
          headers: { 'content-type': 'application/json', authorization: `Bearer ${call.key}` },
          body,
        });
        await res.body.text();
        if (res.statusCode !== 200) errors++;
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  await pool.close();
  return { p50: median(latencies), rps: latencies.length / elapsed, errors };
}

/** Gateway CPU of the translation alone, µs per call (request in, whole answer out), interleaved rounds, median. */
function translationCpu(): Record<Api, number> {
  const chat = {
    id: 'chatcmpl-1',
    object: 'chat.completion',
    created: 1,
    model: 'policy',
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: 'The answer is 42.', refusal: null },
        logprobs: null,
        finish_reason: 'stop',
      },
    ],
    usage: { prompt_tokens: 9, completion_tokens: 5, total_tokens: 14 },
  } as const;
  const steps: Record<Api, () => unknown> = {
    chat: () => parseBody(chatRequestSchema, BODIES.chat(false).body),
    responses: () => translateResponses(BODIES.responses(false).body).dialect.json(chat as never),
    messages: () => translateMessages(BODIES.messages(false).body).dialect.json(chat as never),
  };
  const rounds: Record<Api, number[]> = { chat: [], responses: [], messages: [] };
  for (let round = 0; round < 7; round++) {
    for (const api of Object.keys(steps) as Api[]) {
      const t0 = performance.now();
      for (let i = 0; i < 20_000; i++) steps[api]();
      rounds[api].push(((performance.now() - t0) * 1000) / 20_000);
    }
  }
  return { chat: median(rounds.chat), responses: median(rounds.responses), messages: median(rounds.messages) };
}

async function main() {
  const cpu = translationCpu();
  console.log(
    `translation CPU per call (request validated + translated, answer translated back), µs: chat (validation only) ${cpu.chat.toFixed(1)}, responses ${cpu.responses.toFixed(1)}, messages ${cpu.messages.toFixed(1)}`,
  );
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'volt-bench-apis-'));
  const { s3, s3cfg } = await startBenchS3(dir);
  try {
    const [up, gw] = (await Promise.all([1, 2].map(() => freePort(HOST)))) as [number, number];
    const upstream = `http://${HOST}:${up}`;
    const gateway = `http://${HOST}:${gw}`;
    await spawnTarget(['upstream', String(up)]);
    await spawnTarget([
      'volt',
      String(gw),
      upstream,
      'wal',
      path.join(dir, 'volt'),
      JSON.stringify(s3cfg),
      'write',
      String(64 * 1024 * 1024),
    ]);
    const admin = new GatewayAdminClient(gateway, 'bench-admin-key');
    let n = 0;
    const rollouts = async (count: number) =>
      Promise.all(
        Array.from({ length: count }, async () => {
          const { token } = await admin.register({
            runId: 'bench',
            iteration: 0,
            rolloutId: `apis-${n++}`,
            attempt: 0,
            mode: 'train',
            policyModel: 'policy',
          });
          return (p: string): Call => ({ path: `/r/${token}/${p}`, key: token });
        }),
      );
    const cells: [Api, boolean][] = (['chat', 'responses', 'messages'] as const).flatMap(
      (api) =>
        [
          [api, false],
          [api, true],
        ] as [Api, boolean][],
    );
    const direct = (stream: boolean) => JSON.stringify(BODIES.chat(stream).body);
    for (const [api, stream] of cells)
      await load(
        gateway,
        (await rollouts(2)).map((at) => at(BODIES[api](stream).path)),
        JSON.stringify(BODIES[api](stream).body),
        2,
        0.5,
      );

    console.log(
      `\nAgent-API bench: ${os.cpus().length} CPUs (shared), load average ${os
        .loadavg()
        .map((l) => l.toFixed(1))
        .join(
          ' ',
        )}, Node ${process.version}, ${ROUNDS} interleaved rounds of ${(SECONDS / ROUNDS).toFixed(2)} s per latency cell, ${SECONDS} s per max req/s cell; mock upstream with a fixed 5-token answer\n`,
    );
    const slices = new Map<string, number[]>();
    const put = (k: string, v: number) => slices.set(k, [...(slices.get(k) ?? []), v]);
    for (let round = 0; round < ROUNDS; round++) {
      for (const stream of [false, true])
        put(
          `direct:${stream}`,
          (await load(upstream, [{ path: '/v1/chat/completions', key: 'direct' }], direct(stream), 1, SECONDS / ROUNDS))
            .p50,
        );
      for (const [api, stream] of cells) {
        const { path: p, body } = BODIES[api](stream);
        const r = await load(
          gateway,
          (await rollouts(1)).map((at) => at(p)),
          JSON.stringify(body),
          1,
          SECONDS / ROUNDS,
        );
        if (r.errors) console.log(`  ${api} stream=${stream}: ${r.errors} non-200 answers`);
        put(`${api}:${stream}`, r.p50);
      }
    }
    const rps = new Map<string, number>();
    for (const [api, stream] of cells) {
      const { path: p, body } = BODIES[api](stream);
      rps.set(
        `${api}:${stream}`,
        (
          await load(
            gateway,
            (await rollouts(32)).map((at) => at(p)),
            JSON.stringify(body),
            32,
            SECONDS,
          )
        ).rps,
      );
    }
    const p50 = (k: string) => median(slices.get(k)!);
    console.log(
      `${'endpoint'.padEnd(22)}${'c=1 p50 ms'.padStart(12)}${'added p50 ms'.padStart(14)}${'vs chat'.padStart(10)}${'max req/s (c=32)'.padStart(18)}${'vs chat'.padStart(10)}`,
    );
    for (const [api, stream] of cells) {
      const key = `${api}:${stream}`;
      const added = p50(key) - p50(`direct:${stream}`);
      const chatAdded = p50(`chat:${stream}`) - p50(`direct:${stream}`);
      const label = `${api}${stream ? ' (stream)' : ''}`;
      console.log(
        `${label.padEnd(22)}${p50(key).toFixed(3).padStart(12)}${added.toFixed(3).padStart(14)}${`${(added / chatAdded).toFixed(2)}x`.padStart(10)}${rps.get(key)!.toFixed(0).padStart(18)}${`${(rps.get(key)! / rps.get(`chat:${stream}`)!).toFixed(2)}x`.padStart(10)}`,
      );
    }
    console.log(
      `direct (mock upstream)${p50('direct:false').toFixed(3).padStart(12)} plain, ${p50('direct:true').toFixed(3)} streamed`,
    );
    console.log(
      `\nGoal: each API's added p50 within 1.3x of chat's (same stream mode). Load average now ${os
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
