import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { readBatchFile } from '../../src/batches/batch-file.js';
import { rolloutOutcomeRecordSchema, type RolloutOutcomeRecord } from '../../src/contracts/rollout-outcome.js';
import type { Span } from '../../src/contracts/span.js';
import { keys } from '../../src/storage/keys.js';
import type { ObjectStore } from '../../src/storage/object-store.js';
import { readSpans } from '../../src/storage/spans.js';
import type { RunStatus } from '../../src/workflows/types.js';

/** One line of what the recording agent (agents/recording-agent.mjs) did, in the order it did it. */
export interface LedgerLine {
  token: string;
  pid: number;
  event: 'start' | 'sent' | 'first_chunk' | 'answered' | 'broken' | 'exit';
  request?: string;
  call?: number;
  at: number;
}

export function readLedger(file: string): LedgerLine[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as LedgerLine);
}

export interface RunPlan {
  runId: string;
  iterations: number;
  groupSize: number;
  tasksPerIteration: number;
  evalTasks: number;
  /** Calls each agent makes (the recording agent's argv[3]). */
  calls: number;
}

/** What the check saw, so a cell can also assert where its kill landed. */
export interface LedgerReport {
  outcomes: RolloutOutcomeRecord[];
  /** Final attempts whose agent saw a request break (the gateway died under it) and retried. */
  brokenThenAnswered: number;
  retriedRollouts: number;
  /** Request ids of every final attempt's spans. */
  storedRequests: Set<string>;
}

function groupBy<T>(items: T[], key: (t: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const item of items) out.set(key(item), [...(out.get(key(item)) ?? []), item]);
  return out;
}

const requestId = (span: Span) => (span.request.headers as Record<string, string>)['x-crash-request'];

/**
 * Nothing lost and nothing duplicated: every planned rollout has exactly one final outcome, not an infra failure;
 * every final attempt's spans are exactly the requests its agent completed (plus, at most, requests whose answer
 * the agent lost in a crash, each once); every sample points at a final attempt's span; the run did every iteration.
 */
export async function assertNothingLost(
  store: ObjectStore,
  plan: RunPlan,
  status: RunStatus,
  ledger: LedgerLine[],
): Promise<LedgerReport> {
  assert.equal(status.history.length, plan.iterations, 'the run finished its planned iterations');
  const byToken = groupBy(ledger, (l) => l.token);
  const report: LedgerReport = { outcomes: [], brokenThenAnswered: 0, retriedRollouts: 0, storedRequests: new Set() };
  for (let iteration = 0; iteration < plan.iterations; iteration++) {
    const prefix = keys.iteration(plan.runId, iteration);
    const outcomes: RolloutOutcomeRecord[] = [];
    for await (const o of store.list(`${prefix}rollouts/`))
      if (o.key.endsWith('/outcome.json')) outcomes.push(await store.getJson(o.key, rolloutOutcomeRecordSchema));
    report.outcomes.push(...outcomes);
    const train = outcomes
      .filter((o) => o.rolloutId.startsWith('g'))
      .map((o) => o.rolloutId)
      .sort();
    const planned = Array.from({ length: plan.tasksPerIteration }, (_, t) =>
      Array.from({ length: plan.groupSize }, (_, k) => `g${t}-r${k}`),
    )
      .flat()
      .sort();
    assert.deepEqual(train, planned, `iteration ${iteration}: every planned training rollout has exactly one outcome`);
    const evals = groupBy(
      outcomes.filter((o) => o.rolloutId.startsWith('eval-')),
      (o) => o.rolloutId.replace(/-\d+$/, ''),
    );
    const summary = status.history[iteration]!;
    const evaluated = [
      ...(iteration === 0 ? ['eval-base'] : []),
      ...(summary.candidate && (summary.evalScore !== null || summary.evalError) ? ['eval-candidate'] : []),
    ];
    assert.deepEqual([...evals.keys()].sort(), evaluated, `iteration ${iteration}: the evaluations that ran`);
    for (const [label, runs] of evals) {
      assert.deepEqual(
        runs.map((o) => o.rolloutId).sort(),
        Array.from({ length: plan.evalTasks }, (_, i) => `${label}-${i}`).sort(),
        `iteration ${iteration}: ${label}`,
      );
    }

    const finalSpans = new Map<string, Map<string, Span>>();
    for (const o of outcomes) {
      const where = `${plan.runId}/${iteration}/${o.rolloutId}/attempt-${o.final.ref.attempt}`;
      assert.notEqual(o.final.outcome, 'infra_failed', `${where}: the final attempt is not an infra failure`);
      if (o.final.ref.attempt > 0) report.retriedRollouts++;
      const spans: Span[] = [];
      for await (const s of readSpans(store, o.final.ref)) spans.push(s);
      assert.deepEqual(
        spans.map((s) => s.seq),
        spans.map((_, i) => i),
        `${where}: span seqs are 0..n-1`,
      );
      const ids = spans.map((s) => requestId(s) ?? '');
      assert.ok(ids.every(Boolean), `${where}: every span carries the agent's request id`);
      assert.equal(new Set(ids).size, ids.length, `${where}: no request is recorded twice`);
      // The attempt's agent is the one token whose requests these are.
      const tokens = new Set(ledger.filter((l) => l.event === 'sent' && ids.includes(l.request!)).map((l) => l.token));
      assert.equal(tokens.size, 1, `${where}: its spans come from one agent (${[...tokens].join(', ')})`);
      const lines = byToken.get([...tokens][0]!)!;
      const answered = lines.filter((l) => l.event === 'answered').map((l) => l.request!);
      // An agent that ran out of time (a busy machine) was stopped mid-call: its outcome says so, and only that differs.
      if (o.final.outcome === 'succeeded') {
        assert.equal(lines.filter((l) => l.event === 'exit').length, 1, `${where}: its agent ran to the end once`);
        assert.deepEqual(
          answered.map((l) => lines.find((x) => x.request === l && x.event === 'sent')!.call),
          Array.from({ length: plan.calls }, (_, i) => i),
          `${where}: each call answered once`,
        );
      }
      const sent = new Set(lines.filter((l) => l.event === 'sent').map((l) => l.request!));
      for (const id of ids) assert.ok(sent.has(id), `${where}: span ${id} is a request its agent sent`);
      for (const id of answered)
        assert.ok(ids.includes(id), `${where}: answered request ${id} has its span (nothing lost)`);
      // A request the agent lost in a crash may have been recorded; if so, its retry is a different request.
      const extra = ids.filter((id) => !answered.includes(id));
      const last = lines.filter((l) => l.event === 'sent').at(-1)?.request;
      for (const id of extra)
        assert.ok(
          lines.some((l) => l.request === id && l.event === 'broken') ||
            (o.final.outcome !== 'succeeded' && id === last),
          `${where}: unanswered span ${id} is a request that broke`,
        );
      if (lines.some((l) => l.event === 'broken')) report.brokenThenAnswered++;
      for (const id of ids) report.storedRequests.add(id);
      finalSpans.set(o.rolloutId, new Map(spans.map((s) => [s.spanId, s])));
    }

    if (status.history[iteration]!.samples > 0) {
      const samples = readBatchFile(await store.getBytes(keys.batch(plan.runId, iteration)));
      assert.equal(samples.length, status.history[iteration]!.samples);
      assert.equal(new Set(samples.map((s) => s.sample_id)).size, samples.length, 'no sample twice');
      const spanIds = samples.flatMap((s) => s.span_ids);
      assert.equal(new Set(spanIds).size, spanIds.length, 'no span in two samples');
      const finalAttempt = new Map(outcomes.map((o) => [o.rolloutId, o.final.ref.attempt]));
      for (const s of samples) {
        assert.equal(s.attempt, finalAttempt.get(s.rollout_id), `sample ${s.sample_id} comes from the final attempt`);
        for (const id of s.span_ids)
          assert.ok(
            finalSpans.get(s.rollout_id)?.has(id),
            `sample ${s.sample_id}: span ${id} is a stored span of that attempt`,
          );
      }
    }
  }
  return report;
}
