/**
 * Time to first render of the dashboard's run page and of a 10,000-rollout iteration page, in a real headless
 * Chromium (Debian's, through playwright-core), against the running local stack (`volt up`).
 *   node --import tsx bench/dashboard.ts --run <runId> [--rollouts 10000] [--group-size 8] [--reps 5]
 * The iteration is synthetic (stored under run id `bench-dashboard`: a rewards file and a batch manifest shaped like
 * a real iteration's); the run page is a real run's. Prints medians of server time (the HTML's time to first byte),
 * first contentful paint and the load event, and the page's size.
 */
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';
import { connectClient } from '../src/client/connect.js';
import { loadInstallationEnv } from '../src/config/env.js';
import type { BatchManifest } from '../src/contracts/batch-manifest.js';
import type { RewardsFile } from '../src/contracts/rewards.js';
import { buildDashboard } from '../src/dashboard/server.js';
import { keys } from '../src/storage/keys.js';
import { createObjectStore } from '../src/storage/object-store.js';

const { values } = parseArgs({
  options: {
    run: { type: 'string' },
    rollouts: { type: 'string', default: '10000' },
    'group-size': { type: 'string', default: '8' },
    reps: { type: 'string', default: '5' },
  },
});
if (!values.run) throw new Error('--run <runId>: a run of the running stack, for the run page');
const ROLLOUTS = Math.min(Number(values.rollouts), 200_000);
const GROUP = Math.max(1, Number(values['group-size']));
const REPS = Math.min(Math.max(1, Number(values.reps)), 20);
const BENCH_RUN = 'bench-dashboard';

const env = loadInstallationEnv();
const store = createObjectStore(env);
const outcomes = ['succeeded', 'succeeded', 'succeeded', 'agent_failed', 'timed_out', 'infra_failed'] as const;
const rollouts: RewardsFile['rollouts'] = Array.from({ length: ROLLOUTS }, (_, i) => {
  const outcome = outcomes[i % outcomes.length]!;
  return {
    rolloutId: `g${Math.floor(i / GROUP)}-r${i % GROUP}`,
    attempt: 0,
    taskId: `task-${Math.floor(i / GROUP)}`,
    taskKind: i % 2 ? 'hinted' : 'bare',
    groupId: `g${Math.floor(i / GROUP)}`,
    outcome,
    reward: outcome === 'infra_failed' ? null : ((i * 7919) % 100) / 100,
    parts: (outcome === 'infra_failed' ? {} : { hidden_tests: (i % 3) / 2, guards: 0 }) as Record<string, number>,
    flags: i % 97 === 0 ? ['tampered'] : [],
    error: outcome === 'infra_failed' ? 'spawn agent failed: ENOENT' : null,
  };
});
const lineage: Record<string, string> = {};
for (const r of rollouts)
  if (r.reward !== null && r.reward > 0.5) lineage[`span-${r.rolloutId}`] = `${r.rolloutId}.a0.s0`;
const zeroStats = { count: 0, mean: null, std: null, min: null, max: null };
const manifest: BatchManifest = {
  config: { minGroupSize: 2 },
  counts: {
    rollouts: ROLLOUTS,
    groups: Math.ceil(ROLLOUTS / GROUP),
    groupsUsed: Math.ceil(ROLLOUTS / GROUP),
    rolloutsUsed: Object.keys(lineage).length,
    spans: Object.keys(lineage).length,
    transitions: Object.keys(lineage).length,
    merges: 0,
    samples: Object.keys(lineage).length,
    truncated: 0,
    rolloutsWithoutSamples: ROLLOUTS - Object.keys(lineage).length,
  },
  tokens: { prompt: 0, response: 0, trainable: 0 },
  mergeRate: 1,
  lossScale: 1,
  reward: zeroStats,
  advantage: zeroStats,
  drops: { rollouts: {}, groups: {}, spans: {}, samples: {} },
  breaks: [],
  lineage,
};
await store.putJson(keys.rewards(BENCH_RUN, 0), {
  mode: 'train',
  label: 'bench',
  meanReward: 0.5,
  scored: ROLLOUTS,
  infraFailed: 0,
  rollouts,
});
await store.putJson(keys.batchManifest(BENCH_RUN, 0), manifest);

const { client, close } = await connectClient(env);
const app = await buildDashboard({
  client,
  store,
  pages: { temporalWebUrl: 'http://127.0.0.1:8233', namespace: 'default' },
});
await app.listen({ host: '127.0.0.1', port: 0 });
const address = app.server.address();
const base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
const browser = await chromium.launch({
  executablePath: process.env.VOLT_CHROMIUM ?? '/usr/bin/chromium',
  args: ['--no-sandbox'],
});
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

async function measure(pathname: string) {
  const ttfb: number[] = [];
  const fcp: number[] = [];
  const load: number[] = [];
  let bytes = 0;
  for (let i = 0; i < REPS; i++) {
    const page = await browser.newPage();
    const response = await page.goto(`${base}${pathname}`, { waitUntil: 'load' });
    if (response?.status() !== 200) throw new Error(`${pathname}: HTTP ${response?.status()}`);
    bytes = (await response.body()).length;
    // A page that loads fast can reach its load event before Chromium has recorded its first paint: wait for it.
    await page.waitForFunction(`performance.getEntriesByName('first-contentful-paint').length > 0`, null, {
      timeout: 10_000,
    });
    const t = (await page.evaluate(`(() => {
      const nav = performance.getEntriesByType('navigation')[0];
      const paint = performance.getEntriesByName('first-contentful-paint')[0];
      return { ttfb: nav.responseStart - nav.requestStart, fcp: paint ? paint.startTime : NaN, load: nav.loadEventEnd };
    })()`)) as { ttfb: number; fcp: number; load: number };
    ttfb.push(t.ttfb);
    fcp.push(t.fcp);
    load.push(t.load);
    await page.close();
  }
  return { ttfb: median(ttfb), fcp: median(fcp), load: median(load), kib: bytes / 1024 };
}

const pages = [
  [`run page (${values.run})`, `/runs/${encodeURIComponent(values.run)}`],
  [`iteration page, ${ROLLOUTS} rollouts (page 1)`, `/runs/${BENCH_RUN}/iterations/0`],
  [
    `iteration page, ${ROLLOUTS} rollouts, sorted by reward, page 10`,
    `/runs/${BENCH_RUN}/iterations/0?sort=reward&order=desc&page=10`,
  ],
] as const;
console.log(`dashboard first render, Chromium headless, medians of ${REPS} loads`);
console.log('| page | server (TTFB) ms | first contentful paint ms | load ms | HTML KiB |');
console.log('|---|---|---|---|---|');
for (const [name, pathname] of pages) {
  const m = await measure(pathname);
  console.log(`| ${name} | ${m.ttfb.toFixed(0)} | ${m.fcp.toFixed(0)} | ${m.load.toFixed(0)} | ${m.kib.toFixed(0)} |`);
}
await browser.close();
await app.close();
await close();
await store.removePrefix(keys.run(BENCH_RUN));
