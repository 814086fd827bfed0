/**
 * Local rollout runner throughput: rollouts started and reaped per second with a trivial agent, at several
 * concurrencies, against spawning the same command bare (no workdir, env, logs, process-group reaping), and the
 * same rollouts plain (sandbox 'none') against sandboxed (bubblewrap + the gateway forwarder), interleaved.
 * "sandbox adds" = median sandboxed run() latency - median plain run() latency; goal <= 50 ms.
 *   node --import tsx bench/rollouts.ts [--n 200] [--sink s3|discard]
 * Logs go to a real S3 server (rclone) by default; `--sink discard` isolates the runner's own cost.
 * Per-rollout overhead = median(run() latency - agent process lifetime). Goal: >= 20 rollouts/s.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { LocalRunner } from '../src/rollouts/local-runner.js';
import { objectStoreLogSink } from '../src/rollouts/log-sink.js';
import type { LogSink, RolloutSpecInput } from '../src/rollouts/spec.js';
import { createObjectStore } from '../src/storage/object-store.js';
import { startTestServices } from '../test/helpers/services.js';

const { values } = parseArgs({
  options: { n: { type: 'string', default: '200' }, sink: { type: 'string', default: 's3' } },
});
const n = Math.min(Math.max(8, Number(values.n)), 2000);
const ROUNDS = 4;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
const agents: Record<string, string[]> = { '/bin/true': ['/bin/true'], "node -e ''": [process.execPath, '-e', ''] };

/** Run `count` jobs with at most `limit` in flight; returns wall ms. */
async function pool(count: number, limit: number, job: (i: number) => Promise<void>): Promise<number> {
  const t0 = performance.now();
  let next = 0;
  // allSettled: a failing job must not let cleanup race the jobs still running.
  const settled = await Promise.allSettled(
    Array.from({ length: limit }, async () => {
      while (next < count) await job(next++);
    }),
  );
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) throw failed.reason;
  return performance.now() - t0;
}

const bareSpawn = (argv: string[]) =>
  new Promise<void>((resolve, reject) => {
    // Own session like the runner's agents: with sched autogroup each session is scheduled as its own group,
    // so a non-detached baseline would get less CPU than the agents on a busy machine.
    const child = spawn(argv[0] as string, argv.slice(1), {
      stdio: 'ignore',
      detached: true,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    });
    child.on('error', reject);
    child.on('exit', () => resolve());
  });

const services = values.sink === 's3' ? await startTestServices({ s3: true }) : null;
const sink: LogSink = services ? objectStoreLogSink(createObjectStore(services.s3)) : { put: async () => undefined };
const root = await mkdtemp(path.join(tmpdir(), 'volt-bench-rollouts-'));
console.log(
  `local runner, ${n} rollouts per row (node agent: ${Math.ceil(n / 2)}), log sink: ${values.sink}, load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}\n`,
);
console.log(
  'agent        conc   bare spawn/s   plain/s   sandboxed/s   plain run ms   sandboxed run ms   sandbox adds ms   runner overhead ms',
);
const variants = ['none', 'bubblewrap'] as const;
try {
  for (const [name, argv] of Object.entries(agents)) {
    const count = name === '/bin/true' ? n : Math.ceil(n / 2);
    for (const concurrency of [2, 8, 32]) {
      const runner = new LocalRunner({ root, logs: sink, concurrency });
      const runMs = { none: [] as number[], bubblewrap: [] as number[] };
      const agentMs: number[] = [];
      const wallMs = { none: 0, bubblewrap: 0 };
      let [bareMs, id] = [0, 0];
      // Bare, plain and sandboxed rounds alternate so that load from other processes on the machine hits all alike.
      for (let round = 0; round < ROUNDS; round++) {
        const per = Math.ceil(count / ROUNDS);
        bareMs += await pool(per, concurrency, () => bareSpawn(argv));
        for (const sandbox of round % 2 ? [...variants].reverse() : variants) {
          wallMs[sandbox] += await pool(per, concurrency, async () => {
            const i = id++;
            const spec: RolloutSpecInput = {
              ref: { runId: 'bench', iteration: concurrency, rolloutId: `r${i}`, attempt: 0 },
              taskId: 't',
              groupId: 'g',
              mode: 'train',
              taskInput: { i },
              agent: { command: argv },
              gateway: { baseUrl: 'http://127.0.0.1:9/r/t/v1', token: 't' },
              timeoutMs: 60_000,
              sandbox,
            };
            const t0 = performance.now();
            const result = await runner.run(spec, new AbortController().signal);
            runMs[sandbox].push(performance.now() - t0);
            if (sandbox === 'none') agentMs.push(result.durationMs);
            if (result.outcome !== 'succeeded')
              throw new Error(`rollout ${i} (${sandbox}): ${result.outcome} ${result.detail}`);
          });
        }
      }
      await runner.close();
      const done = Math.ceil(count / ROUNDS) * ROUNDS;
      const rate = (ms: number) => (done / ms) * 1000;
      const overhead = median(runMs.none.map((r, i) => r - (agentMs[i] as number)));
      console.log(
        [
          name.padEnd(12),
          String(concurrency).padStart(4),
          rate(bareMs).toFixed(1).padStart(14),
          rate(wallMs.none).toFixed(1).padStart(9),
          rate(wallMs.bubblewrap).toFixed(1).padStart(13),
          median(runMs.none).toFixed(1).padStart(14),
          median(runMs.bubblewrap).toFixed(1).padStart(18),
          (median(runMs.bubblewrap) - median(runMs.none)).toFixed(1).padStart(17),
          overhead.toFixed(1).padStart(20),
        ].join(' '),
      );
    }
  }
} finally {
  await rm(root, { recursive: true, force: true });
  await services?.stop();
}
