import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Client } from '@temporalio/client';
import type { BatchManifest } from '../../src/contracts/batch-manifest.js';
import type { ScoredRolloutRecord } from '../../src/contracts/rewards.js';
import { groupRows, sampleRolloutId, trainedRollouts } from '../../src/dashboard/data.js';
import { aliasMoves, filterRollouts, iterationPage, rolloutPage } from '../../src/dashboard/pages.js';
import { syntheticRollout } from '../helpers/synthetic-spans.js';
import { buildDashboard } from '../../src/dashboard/server.js';
import type { ObjectStore } from '../../src/storage/object-store.js';

const rec = (rolloutId: string, groupId: string, reward: number | null, over: Partial<ScoredRolloutRecord> = {}) =>
  ({
    rolloutId,
    attempt: 0,
    taskId: `t-${groupId}`,
    taskKind: null,
    groupId,
    outcome: reward === null ? 'infra_failed' : 'succeeded',
    reward,
    parts: {},
    flags: [],
    error: null,
    ...over,
  }) satisfies ScoredRolloutRecord;

const manifest = (lineage: Record<string, string>) =>
  ({ config: { minGroupSize: 2 }, lineage }) as unknown as BatchManifest;

void describe('dashboard pages (no services)', () => {
  const rollouts = [
    rec('g0-r0', 'g0', 1),
    rec('g0-r1', 'g0', 0),
    rec('g1-r0', 'g1', 0.5),
    rec('g1-r1', 'g1', 0.5),
    rec('g2-r0', 'g2', null),
    rec('g2-r1', 'g2', null),
    rec('g3-r0', 'g3', 1, { flags: ['tampered'] }),
    rec('g3-r1', 'g3', null),
  ];
  const m = manifest({ 'span-a': 'g0-r0.a0.s0', 'span-b': 'g0-r1.a1.s2' });

  void it('reads the rollout of a sample id, and which rollouts gave samples', () => {
    assert.equal(sampleRolloutId('g0-r1.a1.s2'), 'g0-r1');
    assert.equal(sampleRolloutId('run.with.dots-r3.a0.s10'), 'run.with.dots-r3');
    assert.equal(sampleRolloutId('nonsense'), null);
    assert.deepEqual([...trainedRollouts(m)].sort(), ['g0-r0', 'g0-r1']);
  });

  void it('says why each group gave no samples', () => {
    const rows = groupRows(rollouts, m, trainedRollouts(m));
    assert.deepEqual(
      rows.map((g) => [g.groupId, g.samples, g.why]),
      [
        ['g0', true, null],
        ['g1', false, 'zero variance: every scored rollout got 0.5'],
        ['g2', false, 'no rollout was scored (infra failures or reward errors)'],
        ['g3', false, 'group too small: 1 scored, batch.minGroupSize 2'],
      ],
    );
    assert.deepEqual(
      groupRows(rollouts.slice(0, 2), null, new Set()).map((g) => g.why),
      ['no batch was built for this iteration'],
    );
    const sft = { ...m, config: { estimator: 'rejection_sampling', rejectionThreshold: 1 } } as BatchManifest;
    assert.deepEqual(
      groupRows(rollouts, sft, trainedRollouts(m)).map((g) => g.why),
      [
        null,
        'SFT iteration: no rollout reached batch.rejectionThreshold 1',
        'no rollout was scored (infra failures or reward errors)',
        'every sample dropped (see the manifest drops)',
      ],
    );
  });

  void it("an evaluation's groups are never trained, and its page links back to the iteration's other sets", () => {
    assert.deepEqual(
      groupRows(rollouts.slice(0, 2), null, new Set(), true).map((g) => g.why),
      ['held-out evaluation: scored, never trained'],
    );
    const html = iterationPage(
      {
        runId: 'r',
        iteration: 2,
        set: 'candidate-b',
        evalSets: ['candidate', 'candidate-b'],
        rollouts: rollouts.slice(0, 2),
        groups: groupRows(rollouts.slice(0, 2), null, new Set(), true),
        manifest: null,
        trained: new Set(),
      },
      { sort: 'rollout', order: 'asc', page: 1 },
    );
    assert.match(html, /href="\/runs\/r\/iterations\/2\/eval\/candidate-b\/rollouts\/g0-r0"/);
    assert.match(html, /href="\/runs\/r\/iterations\/2"/);
    assert.match(html, /href="\/runs\/r\/iterations\/2\/eval\/candidate"/);
    assert.match(html, /Held-out evaluation <b>candidate-b<\/b>/);
  });

  void it("tells the alias's promotions from its rollbacks", () => {
    const entry = (iteration: number | null, at: string) => ({
      policy: { name: iteration === null ? 'base' : `p${iteration}`, checkpointKey: null, sha256: null, iteration },
      score: 0.5,
      iteration,
      at,
    });
    const moves = aliasMoves({
      alias: 'best',
      servedAs: 'r-best',
      history: [entry(1, 't1'), entry(3, 't2'), entry(1, 't3'), entry(null, 't4')],
      current: entry(5, 't5'),
    });
    assert.deepEqual(
      moves.map((m) => [m.entry.at, m.move]),
      [
        ['t1', 'promotion'],
        ['t2', 'promotion'],
        ['t3', 'rollback'],
        ['t4', 'rollback'],
        ['t5', 'promotion'],
      ],
    );
  });

  void it('filters and sorts the rollouts table as its query says', () => {
    const view = {
      runId: 'r',
      iteration: 1,
      set: 'train',
      evalSets: [],
      rollouts,
      groups: [],
      manifest: m,
      trained: trainedRollouts(m),
    };
    const ids = (q: Parameters<typeof filterRollouts>[1]) => filterRollouts(view, q).map((r) => r.rolloutId);
    assert.deepEqual(ids({ sort: 'reward', order: 'desc', page: 1 }).slice(0, 3), ['g0-r0', 'g3-r0', 'g1-r0']);
    assert.deepEqual(ids({ outcome: 'infra_failed', sort: 'rollout', order: 'asc', page: 1 }), [
      'g2-r0',
      'g2-r1',
      'g3-r1',
    ]);
    assert.deepEqual(ids({ flag: 'any', sort: 'rollout', order: 'asc', page: 1 }), ['g3-r0']);
    assert.deepEqual(ids({ group: 'g1', sort: 'rollout', order: 'desc', page: 1 }), ['g1-r1', 'g1-r0']);
  });

  void it("shows each rollout's seconds, calls and tokens, sorts by them, and shows - where a record has none", () => {
    const timed = [
      rec('a', 'g0', 1, { durationMs: 4_250, calls: 3, completionTokens: 120 }),
      rec('b', 'g0', 0, { durationMs: 61_000, calls: 1, completionTokens: 9 }),
      rec('c', 'g1', null, { durationMs: 500, calls: null, completionTokens: null }),
      // Written before the fields existed.
      rec('d', 'g1', 0),
    ];
    const view = {
      runId: 'r',
      iteration: 1,
      set: 'train',
      evalSets: [],
      rollouts: timed,
      groups: [],
      manifest: null,
      trained: new Set<string>(),
    };
    const ids = (sort: 'seconds' | 'tokens', order: 'asc' | 'desc') =>
      filterRollouts(view, { sort, order, page: 1 }).map((r) => r.rolloutId);
    assert.deepEqual(ids('seconds', 'desc'), ['b', 'a', 'c', 'd']);
    assert.deepEqual(ids('tokens', 'desc'), ['a', 'b', 'c', 'd']);
    const html = iterationPage(view, { sort: 'rollout', order: 'asc', page: 1 });
    const table = /<div id="rollouts">([\s\S]*?)<\/div>/.exec(html)![1]!;
    const head = [...table.matchAll(/<th>(.*?)<\/th>/g)].map((h) => h[1]!.replace(/<[^>]+>/g, ''));
    const rows = [...table.matchAll(/<tr[^>]*>([\s\S]*?)<\/tr>/g)]
      .slice(1)
      .map((r) => [...r[1]!.matchAll(/<td[^>]*>([\s\S]*?)<\/td>/g)].map((c) => c[1]!.replace(/<[^>]+>/g, '')));
    const col = (name: string) => rows.map((r) => r[head.indexOf(name)]);
    assert.deepEqual(col('seconds'), ['4.3', '61.0', '0.5', '-']);
    assert.deepEqual(col('calls'), ['3', '1', '-', '-']);
    assert.deepEqual(col('tokens'), ['120', '9', '-', '-']);
  });

  void it("names each call's agent role, and marks only the trained role's calls trained", () => {
    const spans = syntheticRollout(
      { runId: 'r', iteration: 0, rolloutId: 'g0-r0', attempt: 0 },
      { turns: 2, seed: 1 },
    ).map((s, i) => ({
      ...s,
      role: i === 0 ? 'solver' : 'checker',
      servedBy: { model: i === 0 ? 'policy-3' : 'base', version: null },
    }));
    const html = rolloutPage({
      runId: 'r',
      iteration: 0,
      set: 'train',
      record: rec('g0-r0', 'g0', 1),
      spans,
      trainedSpans: new Set([spans[0]!.spanId]),
      stdout: null,
      stderr: null,
    });
    const sections = html.split('<section class="span"').slice(1);
    assert.equal(sections.length, 2);
    assert.match(
      sections[0]!,
      /<h3>call 0 \(trained\)<\/h3>\n<p class="meta">role solver · chat\.completions · served by policy-3/,
    );
    assert.match(sections[1]!, /<h3>call 1<\/h3>\n<p class="meta">role checker · chat\.completions · served by base/);
  });

  void it('escapes what the agent and its task said', () => {
    const xss = [rec('g0-r0', 'g0', 1, { error: '<script>alert(1)</script>', flags: ['<img src=x>'] })];
    const html = iterationPage(
      {
        runId: 'r',
        iteration: 0,
        set: 'train',
        evalSets: ['base'],
        rollouts: xss,
        groups: groupRows(xss, null, new Set()),
        manifest: null,
        trained: new Set(),
      },
      { sort: 'rollout', order: 'asc', page: 1 },
    );
    assert.ok(!html.includes('<script>alert(1)'));
    assert.ok(!html.includes('<img src=x>'));
    assert.ok(html.includes('&lt;script&gt;alert(1)&lt;/script&gt;'));
  });

  void it('answers bad ids and bad queries with 404 / 400 pages before reading anything, and asks for its token', async () => {
    // FAKE client and store: every id below is refused before either is touched, and touching them throws.
    const untouchable = new Proxy({}, { get: () => assert.fail('the dashboard read storage for a bad id') });
    const app = await buildDashboard({
      client: untouchable as Client,
      store: untouchable as ObjectStore,
      pages: { temporalWebUrl: 'http://127.0.0.1:8233', namespace: 'default' },
    });
    for (const url of [
      '/runs/..%2F..%2Fetc',
      '/runs/a%20b',
      '/runs/ok/iterations/-1',
      '/runs/ok/iterations/1e3',
      '/runs/ok/iterations/1/eval/..%2F..%2Fx',
      '/runs/ok/iterations/1/eval/a%20b/rollouts/r0',
      '/nope',
    ]) {
      const r = await app.inject({ url });
      assert.equal(r.statusCode, 404, url);
      assert.match(r.body, /<h1>Not found<\/h1>/);
    }
    const bad = await app.inject({ url: '/runs/ok/iterations/1?sort=evil' });
    assert.equal(bad.statusCode, 400);
    assert.match(bad.body, /sort/);
    assert.equal((await app.inject({ url: '/assets/..%2Fserver.ts' })).statusCode, 404);
    assert.equal((await app.inject({ url: '/assets/uPlot.iife.min.js' })).statusCode, 200);
    // Read-only: no method but GET/HEAD has a route.
    assert.equal((await app.inject({ method: 'POST', url: '/runs/x' })).statusCode, 404);
    await app.close();

    const locked = await buildDashboard({
      client: untouchable as Client,
      store: untouchable as ObjectStore,
      pages: { temporalWebUrl: 'http://127.0.0.1:8233', namespace: 'default' },
      token: 'a-dashboard-token-of-length',
    });
    assert.equal((await locked.inject({ url: '/assets/dashboard.js' })).statusCode, 401);
    assert.equal((await locked.inject({ url: '/assets/dashboard.js?token=wrong' })).statusCode, 401);
    const withQuery = await locked.inject({ url: '/assets/dashboard.js?token=a-dashboard-token-of-length' });
    assert.equal(withQuery.statusCode, 200);
    const cookie = String(withQuery.headers['set-cookie']).split(';')[0]!;
    assert.equal((await locked.inject({ url: '/assets/dashboard.js', headers: { cookie } })).statusCode, 200);
    assert.equal(
      (
        await locked.inject({
          url: '/assets/dashboard.js',
          headers: { authorization: 'Bearer a-dashboard-token-of-length' },
        })
      ).statusCode,
      200,
    );
    assert.equal((await locked.inject({ url: '/healthz' })).statusCode, 200);
    await locked.close();
  });
});
