import { escapeHtml, fmt, formatDuration, STYLE, table } from './html.js';
import type { ReportData, SampleRollout } from './report-data.js';
import { newMessagesOnly } from './transcript.js';
import type { ScoreCounts } from '../rewards/by-kind.js';
import { policyLabel, samePolicy } from '../contracts/policy-set.js';

export const CURVE_FILE = 'curve.png';

function wallSeconds(data: ReportData): number {
  const end = data.timing.closedAt ?? data.generatedAt;
  return (Date.parse(end) - Date.parse(data.timing.startedAt)) / 1000;
}

function summary(data: ReportData): string {
  const { status, config, baseScore } = data;
  const best = status.best?.score ?? null;
  const diff = best !== null && baseScore !== null ? (best - baseScore) * 100 : null;
  const rollouts = status.history.reduce((n, h) => n + h.rollouts, 0);
  const rows: [string, unknown][] = [
    [
      'state',
      `${data.timing.state}${data.timing.state === 'RUNNING' ? ` (phase ${status.phase}${status.paused ? ', paused' : ''})` : ''}`,
    ],
    ['model', config?.model ?? '-'],
    ['iterations', `${status.history.length} done of ${config?.iterations ?? status.iterations}`],
    ['group size', config?.groupSize ?? '-'],
    ['tasks / iteration', config?.tasksPerIteration ?? '-'],
    ['rollout sandbox', config?.sandbox ?? '-'],
    ['reward', config?.rewardKind ?? '-'],
    ['base held-out score', fmt(baseScore)],
    ['best held-out score', `${fmt(best)}${status.best ? ` (${policyLabel(status.best.policy)})` : ''}`],
    ['best − base', diff === null ? '-' : `${diff >= 0 ? '+' : ''}${diff.toFixed(1)} points`],
    ...kindGainRows(data),
    ['wall time', `${formatDuration(wallSeconds(data))}${data.timing.closedAt ? '' : ' so far'}`],
    ['started / closed', `${data.timing.startedAt} / ${data.timing.closedAt ?? '-'}`],
    ['total rollouts', rollouts],
    ...lineageRows(status),
  ];
  return `<table>${rows.map(([k, v]) => `<tr><th>${escapeHtml(k)}</th><td>${escapeHtml(v)}</td></tr>`).join('\n')}</table>`;
}

/**
 * What `volt report` prints first: the held-out score base → best, per task kind, and each extra held-out set at
 * the best policy's evaluation (plain text, one line each).
 */
export function headlineLines(data: ReportData): string[] {
  const { status, baseScore } = data;
  const best = status.best?.score ?? null;
  const points = (b: number | null, a: number | null) =>
    b !== null && a !== null ? ` (${a >= b ? '+' : ''}${((a - b) * 100).toFixed(1)} points)` : '';
  const lines = [`held-out score, base → best: ${fmt(baseScore)} → ${fmt(best)}${points(baseScore, best)}`];
  for (const [label, value] of kindGainRows(data)) lines.push(`${label}: ${String(value)}`);
  const bestEval = status.history.find(
    (h) => h.candidate && status.best && samePolicy(h.candidate, status.best.policy),
  )?.eval;
  for (const set of status.baseEval?.extraSets ?? []) {
    const after = bestEval ? (bestEval.extraSets?.find((x) => x.name === set.name)?.score ?? null) : set.score;
    lines.push(
      `held-out set ${set.name}, base → at best: ${fmt(set.score)} → ${fmt(after)}${points(set.score, after)}`,
    );
  }
  return lines;
}

/** Per task kind, base → best (the best policy's own evaluation): the headline when a kind is the real task. */
function kindGainRows(data: ReportData): [string, unknown][] {
  const { status } = data;
  const base = status.baseEval?.byKind;
  if (!base) return [];
  // "best" after promotions and rollbacks; a policy that is no candidate of this run is the one the base eval measured.
  const bestIteration = status.history.find(
    (h) => h.candidate && status.best && samePolicy(h.candidate, status.best.policy),
  );
  const best = bestIteration ? bestIteration.eval?.byKind : base;
  if (!best) return [];
  const rate = (c: ScoreCounts | undefined) => (c && c.scored ? c.rewardSum / c.scored : null);
  return Object.keys(base)
    .sort()
    .map((kind) => {
      const [b, a] = [rate(base[kind]), rate(best[kind])];
      const gain = b !== null && a !== null ? ` (${a >= b ? '+' : ''}${((a - b) * 100).toFixed(1)} points)` : '';
      return [`held-out "${kind}" tasks, base → best`, `${countsCell(base[kind])} → ${countsCell(best[kind])}${gain}`];
    });
}

/** Run → started from → promoted, for runs with model.startFrom, a lineage or a task source. */
function lineageRows(status: ReportData['status']): [string, unknown][] {
  const l = status.lineage;
  if (!l) return [];
  const promoted =
    status.best && status.best.policy.sha256 !== l.incumbent.sha256
      ? status.best.policy.name
      : 'nothing (the incumbent stays)';
  return [
    ['lineage', `${l.name ?? '-'}${l.alias ? ` (served as ${l.alias})` : ''}`],
    ['started from', `${l.startedFrom.name}${l.startedFrom.sha256 ? ` (${l.startedFrom.sha256})` : ''}`],
    ['incumbent (held-out, this run)', `${l.incumbent.name}: ${fmt(l.incumbentScore)}`],
    ['promoted', promoted],
    [
      'tasks taken',
      status.outcome === 'no-new-tasks'
        ? 'no new tasks: nothing trained'
        : `${l.newTasks.length} new, ${l.replayTasks.length} replayed (${l.taskFiles.length} new files)`,
    ],
  ];
}

function iterationTable(data: ReportData): string {
  const rows = data.status.history.map((h) => [
    h.objective === 'sft' ? `${h.iteration} (sft)` : h.iteration,
    h.rollouts,
    h.infraFailed,
    fmt(h.meanReward),
    h.samples,
    h.tokens,
    fmt(h.evalScore),
    evalCounts(h),
    h.promoted ? 'yes' : 'no',
    fmt(h.trainMetrics?.loss, 4),
    fmt(h.trainMetrics?.kl, 4),
    h.dynamicSampling
      ? `+${h.dynamicSampling.extraRollouts} in ${h.dynamicSampling.extraRounds} rounds; informative ${h.dynamicSampling.informativeBefore} → ${h.dynamicSampling.informative}/${h.dynamicSampling.wanted}`
      : '-',
  ]);
  if (rows.length === 0) return '<p>No iteration has finished yet.</p>';
  return table(
    [
      'iteration',
      'rollouts',
      'infra failures',
      'mean reward',
      'samples',
      'tokens',
      'eval score',
      'eval reward sum / scored / tasks',
      'promoted',
      'trainer loss',
      'KL',
      'dynamic sampling',
    ],
    rows,
    'numbers',
  );
}

const TIMED = ['rollouts', 'rewards', 'batch', 'update', 'evaluating'] as const;

/** Where each iteration's wall time went, and when it ended counted from the run's start. */
function timelineTable(data: ReportData): string {
  const { history } = data.status;
  if (history.length === 0) return '';
  const start = Date.parse(data.timing.startedAt);
  const rows = history.map((h) => [
    h.iteration,
    ...TIMED.map((p) => fmt(h.timeline.seconds[p], 0)),
    formatDuration((Date.parse(h.timeline.endedAt) - start) / 1000),
  ]);
  return `<h2>Timeline (seconds per phase)</h2>${table(['iteration', ...TIMED, 'ended, since the run started'], rows, 'numbers')}`;
}

/** The eval score's numerator and denominator, or why the evaluation did not count. */
function evalCounts(h: ReportData['status']['history'][number]): string {
  if (h.evalError) return 'incomplete (not promoted)';
  return h.eval ? `${h.eval.rewardSum.toFixed(2)} / ${h.eval.scored} / ${h.eval.tasks}` : '-';
}

type Evaluated = ReportData['status']['history'][number]['eval'];
/** The run's evaluations in order (base first), named, with what each measured. */
function evaluations(data: ReportData): [string, NonNullable<Evaluated>][] {
  const { status } = data;
  return [
    ...(status.baseEval ? [['base', status.baseEval] as [string, NonNullable<Evaluated>]] : []),
    ...status.history.flatMap((h) =>
      h.eval
        ? [[`iteration ${h.iteration}${h.promoted ? ' (promoted)' : ''}`, h.eval] as [string, NonNullable<Evaluated>]]
        : [],
    ),
  ];
}

const countsCell = (c: ScoreCounts | undefined) =>
  c
    ? `${c.scored ? fmt(c.rewardSum / c.scored) : '-'} (${fmt(c.rewardSum, c.rewardSum % 1 ? 2 : 0)}/${c.scored}${c.scored === c.tasks ? '' : ` of ${c.tasks}`})`
    : '-';

/** Held-out score per task kind, base and each evaluated iteration; empty when the tasks have no kinds. */
function kindSection(data: ReportData): string {
  const evals = evaluations(data).flatMap(([name, e]) =>
    e.byKind ? [[name, e.byKind] as [string, Record<string, ScoreCounts>]] : [],
  );
  if (evals.length === 0) return '';
  const kinds = [...new Set(evals.flatMap(([, byKind]) => Object.keys(byKind)))].sort();
  return `<h2>Held-out score per task kind</h2>\n${table(
    ['evaluation', ...kinds],
    evals.map(([name, byKind]) => [name, ...kinds.map((k) => countsCell(byKind[k]))]),
    'numbers',
  )}`;
}

/** Each of eval.extraSets: its score and per-kind counts at every evaluation (never used for promotion). */
function extraSetsSection(data: ReportData): string {
  const evals = evaluations(data);
  const names = [...new Set(evals.flatMap(([, e]) => (e.extraSets ?? []).map((x) => x.name)))];
  return names
    .map((setName) => {
      const rows = evals.flatMap(([name, e]) => {
        const x = e.extraSets?.find((y) => y.name === setName);
        return x ? [[name, x] as const] : [];
      });
      const kinds = [...new Set(rows.flatMap(([, x]) => Object.keys(x.byKind ?? {})))].sort();
      const body = rows.map(([name, x]) => [
        name,
        x.error ? `incomplete: ${x.error}` : countsCell(x),
        ...kinds.map((k) => countsCell(x.byKind?.[k])),
      ]);
      return `<h2>Held-out set ${escapeHtml(setName)} (eval.extraSets: never used for promotion)</h2>\n${table(['evaluation', 'score', ...kinds], body, 'numbers')}`;
    })
    .join('\n');
}

function promotedSection(data: ReportData): string {
  const p = data.promoted;
  if (!p) return '<p>No checkpoint was promoted: the base model is still the best policy.</p>';
  return table(
    ['name', 'sha256', 'iteration', 'held-out score', 'promoted at'],
    [[p.policy.name, p.policy.sha256 ?? '-', p.iteration, fmt(p.score), p.at]],
  );
}

function rolloutSection(r: SampleRollout): string {
  const turns = newMessagesOnly(r.turns).map((t) => {
    const earlier = t.earlier ? `<p class="meta">(${t.earlier} earlier messages, shown above)</p>` : '';
    const msgs = t.messages
      .map(
        (m) =>
          `<div class="msg ${escapeHtml(m.role)}"><b>${escapeHtml(m.role)}</b><pre>${escapeHtml(m.content)}</pre></div>`,
      )
      .join('\n');
    const meta = `call ${t.seq} · finish ${t.finishReason ?? '-'} · ${t.completionTokens ?? '-'} completion tokens · served by ${t.servedBy}`;
    const err = t.error ? `<p class="error">error: ${escapeHtml(t.error)}</p>` : '';
    return `${earlier}${msgs}\n<div class="msg assistant"><b>assistant (policy)</b><pre>${escapeHtml(t.completion)}</pre><span class="meta">${escapeHtml(meta)}</span></div>${err}`;
  });
  const omitted = r.omittedTurns ? `<p class="meta">… ${r.omittedTurns} more calls not shown.</p>` : '';
  const head = `${r.label} reward: rollout ${r.rolloutId} (attempt ${r.attempt}), task ${r.taskId}, ${r.outcome}, reward ${fmt(r.reward)}`;
  return `<h3>${escapeHtml(head)}</h3>\n${turns.join('\n') || '<p>No LLM calls were recorded.</p>'}${omitted}`;
}

function samplesSection(data: ReportData): string {
  const s = data.samples;
  if (!s) return '<p>No iteration has finished yet.</p>';
  if (s.rollouts.length === 0) return `<p>Iteration ${s.iteration} has no scored rollout.</p>`;
  return `<p>Iteration ${s.iteration}: the rollouts with the best and the worst reward.</p>\n${s.rollouts.map(rolloutSection).join('\n')}`;
}

/** Everything below the title, with `curve` where the learning curve goes (an <img>); null: no curve section. */
export function reportSections(data: ReportData, curve: string | null): string {
  return `${summary(data)}
${curve === null ? '' : `<h2>Learning curve</h2>\n${curve}`}
<h2>Iterations</h2>
${iterationTable(data)}
${timelineTable(data)}
${kindSection(data)}
${extraSetsSection(data)}
<h2>Promoted checkpoint</h2>
${promotedSection(data)}
<h2>Sample rollouts</h2>
${samplesSection(data)}`;
}

/** The whole report as one self-contained page; the only other file it refers to is curve.png next to it. */
export function renderReportHtml(data: ReportData): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Volt run ${escapeHtml(data.runId)}</title><style>${STYLE}</style></head>
<body>
<h1>Volt run ${escapeHtml(data.runId)}</h1>
<p class="meta">Report generated ${escapeHtml(data.generatedAt)}.</p>
${reportSections(data, `<img src="${CURVE_FILE}" alt="mean training reward and held-out eval score per iteration" width="800">`)}
</body></html>
`;
}
