import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { apoCurveData, renderApoReportHtml, type ApoReportData } from '../../src/report/apo-report.js';
import type { ApoStatus } from '../../src/workflows/prompt-optimization-types.js';

const status: ApoStatus = {
  kind: 'promptOptimization',
  runId: 'apo-r',
  round: 2,
  rounds: 2,
  phase: 'done',
  paused: false,
  beam: [3, 1],
  baselineScore: 0.5,
  best: { version: 3, score: 0.75 },
  history: [
    {
      round: 1,
      parents: [0],
      trainMeanReward: 0.25,
      trainRollouts: 4,
      children: [1, 2],
      skipped: [],
      candidates: [
        { version: 1, score: 0.6 },
        { version: 0, score: 0.5 },
        { version: 2, score: 0.1 },
      ],
      beam: [1, 0],
      leader: { version: 1, score: 0.625 },
      best: { version: 1, score: 0.625 },
    },
    {
      round: 2,
      parents: [1, 0],
      trainMeanReward: 0.5,
      trainRollouts: 8,
      children: [3],
      skipped: ['v4 (bootstrap from v0): no further distinct set of demonstrations'],
      candidates: [
        { version: 3, score: 0.7 },
        { version: 1, score: 0.6 },
      ],
      beam: [3, 1],
      leader: { version: 3, score: 0.75 },
      best: { version: 3, score: 0.75 },
    },
  ],
  heldOut: { before: 0.46, after: 0.52, afterVersion: 3 },
  promotion: {
    promoted: true,
    activeVersion: 3,
    activeScore: 0.75,
    reason: "version 3 scored 0.750 > version 0's 0.500 + margin 0",
  },
};

const overlay = (version: number, template: string, parents: number[], round: number) => ({
  runId: 'apo-r',
  version,
  mode: 'append' as const,
  template,
  createdAt: '2026-01-01T00:00:00Z',
  origin: { strategy: 'bootstrap' as const, parents, round, note: `demos for v${version}` },
});

const data: ApoReportData = {
  runId: 'apo-r',
  status,
  apo: null,
  timing: { state: 'COMPLETED', startedAt: '2026-01-01T00:00:00Z', closedAt: '2026-01-01T00:12:30Z' },
  overlays: [overlay(1, 'Example 1: <calc>2+2</calc>', [0], 1), overlay(3, 'Example: <answer>4</answer>', [1], 2)],
  active: {
    runId: 'apo-r',
    version: 3,
    score: 0.75,
    promotedAt: '2026-01-01T00:11:00Z',
    history: [{ version: 3, score: 0.75, promotedAt: '2026-01-01T00:11:00Z' }],
  },
  generatedAt: '2026-01-01T00:13:00Z',
};

describe('prompt-optimisation report', () => {
  it('shows held-out before/after, the promotion, each round and every overlay escaped, the active one marked', () => {
    const html = renderApoReportHtml(data, 'curve.png');
    assert.match(html, /<th>held-out before \(v0\)<\/th><td>0\.460<\/td>/);
    assert.match(html, /<th>held-out after<\/th><td>0\.520 \(active prompt v3\)<\/td>/);
    assert.match(html, /<th>wall time<\/th><td>12m 30s<\/td>/);
    assert.match(html, /promoted: version 3 scored 0\.750 &gt; version 0&#39;s 0\.500/);
    assert.match(
      html,
      /<td>2<\/td><td>v1 v0<\/td><td>0\.500<\/td><td>v3<\/td><td>1<\/td><td>v3 0\.700, v1 0\.600<\/td>/,
    );
    assert.match(html, /<h3>v3: bootstrap from v1 in round 2, mode append — ACTIVE<\/h3>/);
    assert.match(html, /<h3>v1: bootstrap from v0 in round 1, mode append<\/h3>/);
    assert.ok(html.includes('Example 1: &lt;calc&gt;2+2&lt;/calc&gt;'), 'templates are escaped');
    assert.ok(!html.includes('<calc>'));
  });

  it('says when nothing was promoted and no round finished', () => {
    const html = renderApoReportHtml(
      { ...data, status: { ...status, history: [], promotion: null }, overlays: [], active: null },
      'curve.png',
    );
    assert.match(html, /No round has finished yet/);
    assert.match(html, /Nothing was promoted: the agent's own prompt \(v0\) is active/);
    assert.match(html, /No overlay was stored/);
  });

  it('plots the training reward per round and the leader on the validation set from the baseline at round 0', () => {
    const curve = apoCurveData(data);
    assert.deepEqual(curve.iterations, [1, 2]);
    assert.deepEqual(curve.meanReward, [0.25, 0.5]);
    assert.deepEqual(curve.evalIterations, [0, 1, 2]);
    assert.deepEqual(curve.evalScores, [0.5, 0.625, 0.75]);
    assert.equal(curve.baseScore, 0.5);
    assert.equal(curve.labels?.x, 'round');
  });
});
