import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { curveData } from '../../src/report/curve-data.js';
import { escapeHtml, formatDuration } from '../../src/report/html.js';
import { headlineLines, renderReportHtml } from '../../src/report/render-html.js';
import type { ReportData } from '../../src/report/report-data.js';
import { pickSamples } from '../../src/report/store-data.js';
import { requestMessages } from '../../src/prompts/message-text.js';
import { newMessagesOnly, spanToTurn } from '../../src/report/transcript.js';
import { alias, history, lastRewards, RUN_ID, span, spans, status, XSS } from './synthetic-run.js';

const data = (o: Partial<ReportData> = {}): ReportData => ({
  runId: RUN_ID,
  status,
  config: {
    model: 'm',
    iterations: 2,
    groupSize: 2,
    tasksPerIteration: 2,
    rewardKind: 'numeric_match',
    sandbox: 'bubblewrap',
  },
  timing: { state: 'COMPLETED', startedAt: '2026-11-30T10:00:00.000Z', closedAt: '2026-11-30T12:01:01.000Z' },
  baseScore: 0.25,
  promoted: alias.current,
  samples: null,
  generatedAt: '2026-11-30T13:00:00.000Z',
  ...o,
});

describe('report rendering (pure)', () => {
  it('picks the best and the worst scored rollout, never an unscored one', () => {
    assert.deepEqual(
      pickSamples(lastRewards.rollouts).map((s) => [s.label, s.record.rolloutId]),
      [
        ['best', 'g0-r1'],
        ['worst', 'g0-r0'],
      ],
    );
    assert.deepEqual(
      pickSamples(lastRewards.rollouts.slice(1, 3)).map((s) => s.record.rolloutId),
      ['g0-r1'],
    );
    assert.deepEqual(pickSamples(lastRewards.rollouts.slice(2, 3)), []);
    const tie = lastRewards.rollouts.map((r) => ({ ...r, reward: r.reward === null ? null : 1 }));
    assert.deepEqual(
      pickSamples(tie).map((s) => s.record.rolloutId),
      ['g0-r0', 'g0-r1'],
    );
  });

  it('shows each turn only what is new since the previous call', () => {
    const turns = newMessagesOnly(spans.slice(0, 2).map(spanToTurn));
    assert.deepEqual(
      turns.map((t) => t.messages.map((m) => m.role)),
      [['system', 'user'], ['tool']],
    );
    assert.deepEqual(
      turns.map((t) => t.earlier),
      [0, 3],
    );
    // A call that is not a continuation (new conversation) keeps all its messages.
    const fresh = newMessagesOnly(
      [spans[0]!, span('g0-r1', 1, [{ role: 'user', content: 'other' }], 'x')].map(spanToTurn),
    );
    assert.deepEqual(fresh[1]!.messages, [{ role: 'user', content: 'other' }]);
  });

  it('flattens content parts, tool calls and legacy prompts into text', () => {
    assert.deepEqual(
      requestMessages({
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'a' },
              { type: 'text', text: 'b' },
            ],
          },
          { role: 'assistant', content: null, tool_calls: [{ id: '1', function: { name: 'calc' } }] },
        ],
      }),
      [
        { role: 'user', content: 'a\nb' },
        { role: 'assistant', content: 'tool calls: [{"id":"1","function":{"name":"calc"}}]' },
      ],
    );
    assert.deepEqual(requestMessages({ prompt: 'Q: 2+2' }), [{ role: 'prompt', content: 'Q: 2+2' }]);
    assert.deepEqual(requestMessages('not an object'), []);
  });

  it('reads Responses and Messages API requests as the agent sent them (instructions / system first)', () => {
    assert.deepEqual(
      requestMessages({
        model: 'm',
        instructions: 'Be brief.',
        input: [
          { role: 'user', content: [{ type: 'input_text', text: 'What is 2+3?' }] },
          { type: 'function_call', call_id: 'c1', name: 'add', arguments: '{"a":2,"b":3}' },
          { type: 'function_call_output', call_id: 'c1', output: '5' },
        ],
      }),
      [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'What is 2+3?' },
        { role: 'assistant', content: 'tool calls: [{"name":"add","arguments":"{\\"a\\":2,\\"b\\":3}"}]' },
        { role: 'tool', content: '5' },
      ],
    );
    assert.deepEqual(requestMessages({ model: 'm', input: 'hi' }), [{ role: 'user', content: 'hi' }]);
    assert.deepEqual(
      requestMessages({ model: 'm', max_tokens: 5, system: 'Be brief.', messages: [{ role: 'user', content: 'hi' }] }),
      [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'hi' },
      ],
    );
  });

  it('puts the base score at 0 and each eval after its update; skipped evals are left out', () => {
    const skipped = { ...status, history: [history[0]!, { ...history[1]!, evalScore: null }] };
    assert.deepEqual(curveData(data({ status: skipped })), {
      title: `run ${RUN_ID}`,
      iterations: [0, 1],
      meanReward: [0.3, 0.55],
      evalIterations: [0, 1],
      evalScores: [0.25, 0.5],
      baseScore: 0.25,
    });
    assert.deepEqual(curveData(data({ baseScore: null })).evalIterations, [1, 2]);
  });

  it('summarises a finished run: score difference in points, wall time, totals, per-iteration rows', () => {
    const html = renderReportHtml(data());
    assert.match(html, /<th>best − base<\/th><td>\+25\.0 points<\/td>/);
    assert.match(html, /<th>wall time<\/th><td>2h 1m 1s<\/td>/);
    assert.match(html, /<th>total rollouts<\/th><td>8<\/td>/);
    assert.match(
      html,
      /<tr><td>1<\/td><td>4<\/td><td>1<\/td><td>0\.550<\/td><td>2<\/td><td>210<\/td><td>0\.375<\/td><td>3\.00 \/ 8 \/ 8<\/td><td>no<\/td><td>-0\.0500<\/td><td>0\.0040<\/td><td>-<\/td><\/tr>/,
    );
  });

  it('reports held-out scores per task kind, base and each evaluation, when the tasks have kinds', () => {
    assert.doesNotMatch(renderReportHtml(data()), /per task kind/, 'no section for tasks without kinds');
    const byKind = (plain: number, word: number) => ({
      plain: { rewardSum: plain, scored: 4, tasks: 4 },
      word: { rewardSum: word, scored: 3, tasks: 4 },
    });
    const kinded = {
      ...status,
      baseEval: { score: 0.25, rewardSum: 2, scored: 7, tasks: 8, byKind: byKind(2, 0) },
      best: { policy: status.history[1]!.candidate!, score: 0.375 },
      history: status.history.map((h) =>
        h.eval ? { ...h, promoted: true, eval: { ...h.eval, byKind: byKind(3, 1.5) } } : h,
      ),
    };
    const html = renderReportHtml(data({ status: kinded }));
    assert.match(html, /<h2>Held-out score per task kind<\/h2>/);
    assert.match(html, /<tr><th>evaluation<\/th><th>plain<\/th><th>word<\/th><\/tr>/);
    assert.match(html, /<tr><td>base<\/td><td>0\.500 \(2\/4\)<\/td><td>0\.000 \(0\/3 of 4\)<\/td><\/tr>/);
    assert.match(
      html,
      /<tr><td>iteration 1 \(promoted\)<\/td><td>0\.750 \(3\/4\)<\/td><td>0\.500 \(1\.50\/3 of 4\)<\/td><\/tr>/,
    );
    // the summary's per-kind headline: base → the promoted checkpoint's evaluation (iteration 1 here)
    assert.match(
      html,
      /<th>held-out &quot;word&quot; tasks, base → best<\/th><td>0\.000 \(0\/3 of 4\) → 0\.500 \(1\.50\/3 of 4\) \(\+50\.0 points\)<\/td>/,
    );
    assert.match(
      html,
      /<th>held-out &quot;plain&quot; tasks, base → best<\/th><td>0\.500 \(2\/4\) → 0\.750 \(3\/4\) \(\+25\.0 points\)<\/td>/,
    );
    // `volt report` prints the same headline as text, first
    assert.deepEqual(headlineLines(data({ status: kinded })), [
      'held-out score, base → best: 0.250 → 0.375 (+12.5 points)',
      'held-out "plain" tasks, base → best: 0.500 (2/4) → 0.750 (3/4) (+25.0 points)',
      'held-out "word" tasks, base → best: 0.000 (0/3 of 4) → 0.500 (1.50/3 of 4) (+50.0 points)',
    ]);
    // rolled back to the base model: best is what the base evaluation measured; to a candidate without kinds: no rows
    const base = {
      policy: { name: 'smollm2-135m-instruct', checkpointKey: null, sha256: null, iteration: null },
      score: 0.25,
    };
    assert.match(
      renderReportHtml(data({ status: { ...kinded, best: base } })),
      /<td>0\.000 \(0\/3 of 4\) → 0\.000 \(0\/3 of 4\) \(\+0\.0 points\)<\/td>/,
    );
    assert.doesNotMatch(renderReportHtml(data({ status: { ...kinded, best: status.best } })), /base → best/);
  });

  it('reports each eval.extraSets set (score and kinds, incomplete ones as such) and what dynamic sampling added', () => {
    assert.doesNotMatch(renderReportHtml(data()), /Held-out set/, 'no section without extra sets');
    const set = (rewardSum: number, error: string | null = null) => ({
      name: 'b',
      score: error ? null : rewardSum / 10,
      rewardSum,
      scored: 10,
      tasks: 10,
      resultKey: 'k',
      error,
      byKind: { word: { rewardSum, scored: 10, tasks: 10 } },
    });
    const withSets = {
      ...status,
      baseEval: { score: 0.25, rewardSum: 2, scored: 8, tasks: 8, extraSets: [set(1)] },
      history: status.history.map((h, i) => ({
        ...h,
        eval: {
          ...(h.eval ?? { rewardSum: 4, scored: 8, tasks: 8 }),
          extraSets: [i === 0 ? set(0, 'too few scored') : set(4)],
        },
        dynamicSampling: {
          wanted: 4,
          informativeBefore: 1,
          informative: 3,
          extraRounds: 2,
          extraGroups: 5,
          extraRollouts: 10,
        },
      })),
    };
    const html = renderReportHtml(data({ status: withSets }));
    assert.match(html, /<h2>Held-out set b \(eval.extraSets: never used for promotion\)<\/h2>/);
    assert.match(html, /<tr><td>base<\/td><td>0\.100 \(1\/10\)<\/td><td>0\.100 \(1\/10\)<\/td><\/tr>/);
    assert.match(
      html,
      /<tr><td>iteration 0 \(promoted\)<\/td><td>incomplete: too few scored<\/td><td>0\.000 \(0\/10\)<\/td><\/tr>/,
    );
    assert.match(html, /<tr><td>iteration 1<\/td><td>0\.400 \(4\/10\)<\/td>/);
    assert.match(html, /<td>\+10 in 2 rounds; informative 1 → 3\/4<\/td>/);
    // the best policy (iteration 0's) has no score on b: the headline says so rather than inventing one
    assert.equal(headlineLines(data({ status: withSets })).at(-1), 'held-out set b, base → at best: 0.100 → -');
    const bestIs1 = { ...withSets, best: { policy: withSets.history[1]!.candidate!, score: 0.5 } };
    assert.equal(
      headlineLines(data({ status: bestIs1 })).at(-1),
      'held-out set b, base → at best: 0.100 → 0.400 (+30.0 points)',
    );
  });

  it("prints each iteration's seconds per phase and when it ended since the run started", () => {
    const none = { ...status, history: [] };
    assert.doesNotMatch(renderReportHtml(data({ status: none })), /Timeline/, 'no section before an iteration ended');
    const start = Date.parse(data().timing.startedAt);
    const timed = {
      ...status,
      history: status.history.map((h, i) => ({
        ...h,
        timeline: {
          seconds: { rollouts: 95.4, rewards: 2, batch: 3, update: 61, evaluating: 80 },
          endedAt: new Date(start + (i + 1) * 250_000).toISOString(),
        },
      })),
    };
    const html = renderReportHtml(data({ status: timed }));
    assert.match(html, /<h2>Timeline \(seconds per phase\)<\/h2>/);
    assert.match(
      html,
      /<tr><td>0<\/td><td>95<\/td><td>2<\/td><td>3<\/td><td>61<\/td><td>80<\/td><td>4m 10s<\/td><\/tr>/,
    );
    assert.match(html, /<td>8m 20s<\/td><\/tr>/);
  });

  it('describes a running run with nothing finished and nothing promoted', () => {
    const running = {
      ...status,
      phase: 'rollouts' as const,
      iteration: 0,
      best: null,
      history: [],
      meanRewards: [],
      evalScores: [],
    };
    const html = renderReportHtml(
      data({
        status: running,
        promoted: null,
        baseScore: null,
        timing: { state: 'RUNNING', startedAt: '2026-11-30T12:59:30.000Z', closedAt: null },
      }),
    );
    assert.match(html, /RUNNING \(phase rollouts\)/);
    assert.match(html, /30s so far/);
    assert.match(html, /No checkpoint was promoted/);
    assert.match(html, /<th>best − base<\/th><td>-<\/td>/);
    assert.equal(html.match(/No iteration has finished yet/g)?.length, 2);
  });

  it('escapes everything that came from agents and models, and says what it cut', () => {
    const turn = {
      ...spanToTurn(span('r', 0, [{ role: '<img onerror=x>', content: XSS }], '</pre><script>')),
      error: '<b>upstream</b>',
    };
    const html = renderReportHtml(
      data({
        samples: {
          iteration: 1,
          rollouts: [
            {
              label: 'worst',
              rolloutId: 'r',
              attempt: 0,
              taskId: '<t>',
              outcome: 'agent_failed',
              reward: -0.5,
              turns: [turn],
              omittedTurns: 7,
            },
          ],
        },
      }),
    );
    assert.ok(!html.includes('<script>') && !html.includes('<img onerror') && !html.includes('<b>upstream'));
    assert.match(html, /task &lt;t&gt;, agent_failed, reward -0\.500/);
    assert.match(html, /… 7 more calls not shown/);
    assert.equal(escapeHtml(`"'&`), '&quot;&#39;&amp;');
    assert.equal(formatDuration(59.6), '1m 0s');
  });
});
