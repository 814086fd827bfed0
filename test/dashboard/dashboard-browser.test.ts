import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import { chromium, type Browser, type Page } from 'playwright-core';
import { connectClient } from '../../src/client/connect.js';
import { startTrainingRun } from '../../src/client/runs.js';
import { parseRunConfig } from '../../src/config/run.js';
import { rewardsFileSchema } from '../../src/contracts/rewards.js';
import type { Span } from '../../src/contracts/span.js';
import { buildDashboard } from '../../src/dashboard/server.js';
import { keys } from '../../src/storage/keys.js';
import { createObjectStore, type ObjectStore } from '../../src/storage/object-store.js';
import { readSpans } from '../../src/storage/spans.js';
import { statusQuery } from '../../src/workflows/definitions.js';
import type { RunStatus } from '../../src/workflows/types.js';
import { root, startPipelineStack, tinyRunConfig, type PipelineStack } from '../pipeline/harness.js';

const CHROMIUM = process.env.VOLT_CHROMIUM ?? '/usr/bin/chromium';
const RUN_ID = 'dash-run';
/** Where the test leaves a screenshot of every page (looked at by whoever changes a page). */
const SHOTS = path.join(process.env.VOLT_DATA_DIR ?? path.join(root, '.volt'), 'test-screenshots', 'dashboard');

/**
 * The dashboard in a real headless Chromium (Debian's, driven by playwright-core) over a real two-iteration run:
 * real Temporal, S3, model server, gateway, worker and agent processes. Every page loads without console errors and
 * shows what the stores hold; the run page's curve gains a point when the running run's next iteration ends.
 */
describe('dashboard in a real browser over a real run', { timeout: 1_500_000 }, () => {
  let stack: PipelineStack;
  let worker: ChildProcess;
  let client: Client;
  let closeClient: () => Promise<void>;
  let store: ObjectStore;
  let app: FastifyInstance;
  let url: string;
  let browser: Browser;
  const errors: string[] = [];

  before(async () => {
    stack = await startPipelineStack();
    await stack.startGateway();
    worker = await stack.startWorker('all');
    ({ client, close: closeClient } = await connectClient(stack.env));
    store = createObjectStore(stack.env);
    app = await buildDashboard({
      client,
      store,
      pages: { temporalWebUrl: 'http://127.0.0.1:1', namespace: 'default' },
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const address = app.server.address();
    url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    await mkdir(SHOTS, { recursive: true });
  });
  after(async () => {
    await browser?.close();
    await app?.close();
    await closeClient?.();
    worker?.kill('SIGTERM');
    await stack?.stop();
  });

  /** `expectStatus` other than 200: the browser's own "failed to load" console line for it is expected. */
  async function open(pathname: string, shot: string, expectStatus = 200): Promise<{ page: Page; status: number }> {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on('console', (m) => {
      if (m.type() !== 'error') return;
      if (expectStatus !== 200 && m.text().includes(`status of ${expectStatus}`)) return;
      errors.push(`${pathname}: ${m.text()}`);
    });
    page.on('pageerror', (e) => errors.push(`${pathname}: ${e.message}`));
    const response = await page.goto(`${url}${pathname}`, { waitUntil: 'load' });
    await page.screenshot({ path: path.join(SHOTS, `${shot}.png`), fullPage: true });
    return { page, status: response?.status() ?? 0 };
  }

  /** The stored spans of one of iteration 1's rollouts, training or evaluation. */
  async function spansOf(record: { rolloutId: string; attempt: number }): Promise<Span[]> {
    const spans: Span[] = [];
    for await (const s of readSpans(store, { runId: RUN_ID, iteration: 1, ...record })) spans.push(s);
    return spans;
  }

  const cells = (page: Page, selector: string) =>
    page.$$eval(selector, (rows) => rows.map((r) => [...r.querySelectorAll('td')].map((td) => td.textContent ?? '')));

  it('follows a running run live, then shows every page as the stores hold it', async () => {
    const config = parseRunConfig(tinyRunConfig(RUN_ID, { iterations: 2 }));
    const { handle } = await startTrainingRun(client, config, { dashboardUrl: url });
    // Temporal Web shows the run's static details: a Markdown link to its dashboard page.
    const details = await (await handle.describe()).staticDetails();
    assert.equal(details, `[Volt dashboard: run ${RUN_ID}](${url}/runs/${RUN_ID})`);
    // Open the run page while the run goes, once its first iteration has ended.
    let status: RunStatus | null = null;
    for (const t0 = Date.now(); Date.now() - t0 < 900_000; await sleep(1000)) {
      status = await handle.query(statusQuery).catch(() => null);
      if ((status?.history.length ?? 0) >= 1) break;
    }
    assert.equal(status?.history.length, 1, 'the first iteration ended');
    const live = await open(`/runs/${RUN_ID}`, 'run-live');
    assert.equal(live.status, 200);
    const before = Number(await live.page.getAttribute('#curve', 'data-points'));
    assert.equal(before, 1);
    assert.ok(await live.page.$('#curve canvas'), 'uPlot drew the curve');
    // The page polls the JSON API: the second iteration's end adds its point without a reload.
    await live.page.waitForFunction(`document.querySelector('#curve')?.getAttribute('data-points') === '2'`, null, {
      timeout: 900_000,
      polling: 1000,
    });
    assert.equal((await cells(live.page, '#iterations tbody tr')).length, 2, 'the iteration table was refreshed');
    await live.page.screenshot({ path: path.join(SHOTS, 'run-live-after.png'), fullPage: true });
    const final: RunStatus = await handle.result();
    assert.equal(final.history.length, 2);

    // Runs page: the run, its state and best score.
    const runs = await open('/', 'runs');
    assert.equal(runs.status, 200);
    const runRows = await cells(runs.page, 'tbody tr');
    const row = runRows.find((r) => r[0] === RUN_ID);
    assert.ok(row, `the run is listed: ${JSON.stringify(runRows)}`);
    assert.equal(row[2], 'COMPLETED');

    // Run page: one row per iteration, equal to the workflow's own records.
    const run = await open(`/runs/${RUN_ID}`, 'run');
    const table = await cells(run.page, '#iterations tbody tr');
    assert.deepEqual(
      table.map((r) => r.slice(0, 5).map(Number)),
      final.history.map((h) => [h.iteration, h.rollouts, h.infraFailed, h.rollouts - h.infraFailed, h.samples]),
    );

    // Checkpoints: the base model, then each update's samples → adapter → evaluation, as the workflow recorded them.
    const checkpoints = await cells(run.page, '#checkpoints tbody tr');
    const updates = final.history.filter((h) => h.candidate);
    assert.equal(checkpoints.length, 1 + updates.length);
    assert.equal(checkpoints[0]![4], `main ${final.baseEval!.score.toFixed(3)}`);
    updates.forEach((h, i) => {
      const [iteration, , samples, adapter, evaluation, promoted] = checkpoints[i + 1]!;
      assert.equal(Number(iteration), h.iteration);
      assert.match(samples!, new RegExp(`^${h.samples} samples`));
      assert.ok(adapter!.startsWith(h.candidate!.name), adapter);
      assert.equal(evaluation, `main ${h.evalScore!.toFixed(3)}`);
      assert.equal(promoted, h.promoted ? 'yes' : 'no');
    });
    // Promotions and rollbacks: one promotion per promoted iteration (this run rolls nothing back).
    const moves = await cells(run.page, '#promotions tbody tr');
    assert.deepEqual(
      moves.map((r) => [r[1], Number(r[2])]),
      final.history.filter((h) => h.promoted).map((h) => ['promotion', h.iteration]),
    );
    // An evaluation's held-out rollouts open from its score.
    await Promise.all([
      run.page.waitForURL(/\/iterations\/1\/eval\/candidate$/),
      run.page.click(
        `#checkpoints tbody tr:nth-child(${1 + updates.findIndex((h) => h.iteration === 1) + 1}) a:text-matches("^main")`,
      ),
    ]);
    await run.page.screenshot({ path: path.join(SHOTS, 'evaluation.png'), fullPage: true });
    const evalRewards = await store.getJson(keys.evaluation(RUN_ID, 1, 'candidate'), rewardsFileSchema);
    const evalRows = await cells(run.page, '#rollouts tbody tr');
    assert.deepEqual(
      evalRows.map((r) => [r[0], r[5], r[11]]).sort(),
      evalRewards.rollouts.map((r) => [r.rolloutId, r.reward === null ? '-' : r.reward.toFixed(3), 'no']).sort(),
    );
    const evalRecord = evalRewards.rollouts[0]!;
    const evalSpans = await spansOf(evalRecord);
    assert.ok(evalSpans.length > 0, 'the evaluation rollout made model calls');
    const evalRollout = await open(
      `/runs/${RUN_ID}/iterations/1/eval/candidate/rollouts/${evalRecord.rolloutId}`,
      'evaluation-rollout',
    );
    assert.equal(evalRollout.status, 200);
    assert.equal(await evalRollout.page.$$eval('section.span', (e) => e.length), evalSpans.length);

    // Iteration page: every stored rollout, filters and sorting.
    const rewards = await store.getJson(keys.rewards(RUN_ID, 1), rewardsFileSchema);
    const it1 = await open(`/runs/${RUN_ID}/iterations/1`, 'iteration');
    assert.equal(it1.status, 200);
    const rolloutRows = await cells(it1.page, '#rollouts tbody tr');
    assert.deepEqual(rolloutRows.map((r) => r[0]).sort(), rewards.rollouts.map((r) => r.rolloutId).sort());
    for (const r of rewards.rollouts) {
      const shown = rolloutRows.find((x) => x[0] === r.rolloutId)!;
      assert.deepEqual(
        [shown[1], shown[4], shown[5], shown[8], shown[9], shown[10]],
        [
          r.groupId,
          r.outcome,
          r.reward === null ? '-' : r.reward.toFixed(3),
          (r.durationMs! / 1000).toFixed(1),
          String(r.calls ?? '-'),
          String(r.completionTokens ?? '-'),
        ],
      );
    }
    assert.ok(
      rewards.rollouts.some((r) => (r.calls ?? 0) > 0 && (r.completionTokens ?? 0) > 0),
      'a rollout that called the model shows its calls and tokens',
    );
    // Sort by reward, descending, by clicking its header twice (ascending first).
    const sortBy = async (order: string) =>
      Promise.all([
        it1.page.waitForURL(new RegExp(`sort=reward&order=${order}`)),
        it1.page.click('#rollouts th a:text-is("reward")'),
      ]);
    await sortBy('asc');
    await sortBy('desc');
    const sorted = (await cells(it1.page, '#rollouts tbody tr')).map((r) => Number(r[5]));
    assert.deepEqual(
      sorted,
      [...sorted].sort((a, b) => b - a),
    );
    // Filter to one group through the form.
    const group = rewards.rollouts[0]!.groupId;
    await it1.page.selectOption('select[name="group"]', group);
    await Promise.all([
      it1.page.waitForURL(new RegExp(`group=${encodeURIComponent(group)}`)),
      it1.page.click('form.filters button'),
    ]);
    const filtered = await cells(it1.page, '#rollouts tbody tr');
    assert.deepEqual(
      filtered.map((r) => r[0]).sort(),
      rewards.rollouts
        .filter((r) => r.groupId === group)
        .map((r) => r.rolloutId)
        .sort(),
    );
    await it1.page.screenshot({ path: path.join(SHOTS, 'iteration-filtered.png'), fullPage: true });

    // Rollout page: every recorded call, in order, with its completion.
    const record = rewards.rollouts.find((r) => r.outcome === 'succeeded') ?? rewards.rollouts[0]!;
    const spans = await spansOf(record);
    const rollout = await open(`/runs/${RUN_ID}/iterations/1/rollouts/${record.rolloutId}`, 'rollout');
    assert.equal(rollout.status, 200);
    const seqs = await rollout.page.$$eval('section.span', (els) => els.map((e) => Number(e.getAttribute('data-seq'))));
    assert.deepEqual(
      seqs,
      spans.map((s) => s.seq),
    );
    assert.ok(spans.length > 0);
    const firstCompletion = await rollout.page.$eval('section.span .completion pre', (e) => e.textContent);
    assert.equal(firstCompletion, spans[0]!.choices[0]!.text ?? '');
    assert.equal(
      await rollout.page.$$eval('section.span .tok', (e) => e.length),
      spans.reduce((n, s) => n + (s.choices[0]?.tokenIds?.length ?? 0), 0),
    );

    // Bad ids: a clear 404 page, never a 5xx.
    for (const bad of [
      '/runs/no-such-run',
      `/runs/${RUN_ID}/iterations/99`,
      `/runs/${RUN_ID}/iterations/x`,
      `/runs/${RUN_ID}/iterations/1/rollouts/nope`,
      `/runs/${RUN_ID}/iterations/1/eval/nope`,
      `/runs/${RUN_ID}/iterations/1/eval/candidate/rollouts/nope`,
      '/runs/..%2F..%2Fetc',
    ]) {
      const nf = await open(bad, `404-${bad.replace(/[^a-z0-9]+/gi, '_')}`, 404);
      assert.equal(nf.status, 404, bad);
      assert.match((await nf.page.textContent('h1')) ?? '', /Not found/);
    }
    assert.deepEqual(errors, [], 'no page logged a console error');
  });
});
