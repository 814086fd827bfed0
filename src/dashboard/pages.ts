import type { Span } from '../contracts/span.js';
import { apoCurveData } from '../report/apo-report.js';
import { apoReportSections } from '../report/apo-report.js';
import { curveData, type CurveData } from '../report/curve-data.js';
import { escapeHtml, fmt, STYLE } from '../report/html.js';
import { reportSections } from '../report/render-html.js';
import { spanToTurn } from '../report/transcript.js';
import type { AliasEntry, ModelAlias, PolicyRef } from '../contracts/policy.js';
import { policyLabel } from '../contracts/policy-set.js';
import type { ExtraSetResult } from '../workflows/types.js';
import { TRAIN_SET, type IterationView, type RolloutView, type RunRow, type RunView } from './data.js';

/** Where the pages link into Temporal Web (the run's workflow) and where the dashboard's own assets live. */
export interface PageContext {
  temporalWebUrl: string;
  namespace: string;
}

const DASHBOARD_STYLE = `
nav { margin-bottom: 1rem; font-size: 13px; } nav a { margin-right: .4rem; }
form.filters { margin: .5rem 0; } form.filters label { margin-right: .8rem; }
th a { color: inherit; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.nosamples td { background: #fff6e5; }
.tok { border-radius: 2px; } .tok.trained { outline: 1px solid #2a9d55; }
.chart { width: 800px; height: 320px; }
`;

export const runUrl = (runId: string) => `/runs/${encodeURIComponent(runId)}`;
/** An iteration's training rollouts, or with `set` one of its evaluations' held-out rollouts. */
export const iterationUrl = (runId: string, iteration: number, set = TRAIN_SET) =>
  `${runUrl(runId)}/iterations/${iteration}${set === TRAIN_SET ? '' : `/eval/${encodeURIComponent(set)}`}`;
export const rolloutUrl = (runId: string, iteration: number, rolloutId: string, set = TRAIN_SET) =>
  `${iterationUrl(runId, iteration, set)}/rollouts/${encodeURIComponent(rolloutId)}`;
export const temporalRunUrl = (ctx: PageContext, runId: string) =>
  `${ctx.temporalWebUrl}/namespaces/${encodeURIComponent(ctx.namespace)}/workflows/${encodeURIComponent(runId)}`;

const link = (href: string, text: unknown) => `<a href="${escapeHtml(href)}">${escapeHtml(text)}</a>`;

function page(title: string, crumbs: [string, string][], body: string, scripts = ''): string {
  const nav = crumbs.map(([href, text]) => link(href, text)).join(' / ');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title><link rel="icon" href="data:,">
<link rel="stylesheet" href="/assets/uPlot.min.css"><style>${STYLE}${DASHBOARD_STYLE}</style></head>
<body>
<nav>${link('/', 'Volt runs')}${nav ? ` / ${nav}` : ''}</nav>
<h1>${escapeHtml(title)}</h1>
${body}
${scripts}
</body></html>
`;
}

/** A table whose cells are HTML already (callers escape); `numeric` columns align right. */
function htmlTable(
  head: string[],
  rows: string[][],
  numeric: number[] = [],
  rowClass: (i: number) => string = () => '',
) {
  const th = head.map((h) => `<th>${h}</th>`).join('');
  const tr = rows
    .map((r, i) => {
      const cls = rowClass(i);
      const tds = r.map((c, j) => `<td${numeric.includes(j) ? ' class="num"' : ''}>${c}</td>`).join('');
      return `<tr${cls ? ` class="${cls}"` : ''}>${tds}</tr>`;
    })
    .join('\n');
  return `<table><thead><tr>${th}</tr></thead><tbody>\n${tr}\n</tbody></table>`;
}

export function notFoundPage(message: string): string {
  return page('Not found', [], `<p class="error">${escapeHtml(message)}</p><p>${link('/', 'All runs')}</p>`);
}

export function errorPage(message: string): string {
  return page('Dashboard error', [], `<p class="error">${escapeHtml(message)}</p>`);
}

export function runsPage(rows: RunRow[], ctx: PageContext): string {
  const body = rows.length
    ? htmlTable(
        ['run', 'kind', 'state', 'phase', 'iteration', 'best score', 'started', 'closed', 'schedule', 'Temporal Web'],
        rows.map((r) => [
          link(runUrl(r.runId), r.runId),
          escapeHtml(r.type === 'trainingRun' ? 'training' : 'prompt optimisation'),
          escapeHtml(r.state),
          escapeHtml(r.phase ?? '-'),
          escapeHtml(r.iteration ?? '-'),
          escapeHtml(fmt(r.bestScore)),
          escapeHtml(r.startedAt),
          escapeHtml(r.closedAt ?? '-'),
          escapeHtml(r.scheduleId ?? '-'),
          link(temporalRunUrl(ctx, r.runId), 'history'),
        ]),
        [4, 5],
      )
    : '<p>No runs yet: start one with <code>volt train &lt;config&gt;</code>.</p>';
  return page('Volt runs', [], `<p class="meta" id="count">${rows.length} runs</p>\n${body}`);
}

/** The chart's element and the script that draws `curve` with uPlot and redraws it from the JSON API while running. */
function liveChart(runId: string, curve: CurveData, running: boolean): { html: string; script: string } {
  const data = JSON.stringify({ curve, running }).replaceAll('<', '\\u003c');
  const html = `<div id="curve" class="chart" data-points="${curve.iterations.length}"></div>`;
  const script = `<script src="/assets/uPlot.iife.min.js"></script>
<script id="curve-data" type="application/json">${data}</script>
<script src="/assets/dashboard.js"></script>
<script>voltDashboard.curve(${JSON.stringify(runId).replaceAll('<', '\\u003c')}, JSON.parse(document.getElementById('curve-data').textContent));</script>`;
  return { html, script };
}

/** A manifest's drops by what was dropped (rollouts, groups, spans, samples) and reason: `rollouts zero_variance 3; ...`. */
function dropsText(drops: Record<string, Record<string, number>>): string {
  const parts = Object.entries(drops).flatMap(([what, reasons]) => {
    const counted = Object.entries(reasons).filter(([, n]) => n > 0);
    return counted.length ? [`${what} ${counted.map(([k, n]) => `${k} ${n}`).join(', ')}`] : [];
  });
  return parts.length ? parts.join('; ') : '-';
}

type TrainingView = Extract<RunView, { kind: 'training' }>;

/** Every update's checkpoint with where it came from and what it scored: samples → adapter → evaluation. */
function checkpointsSection({ report, manifests }: TrainingView): string {
  const runId = report.runId;
  const evalLinks = (iteration: number, label: string, score: number | null, extra: ExtraSetResult[] | undefined) =>
    [
      link(iterationUrl(runId, iteration, label), `main ${fmt(score)}`),
      ...(extra ?? []).map((x) =>
        link(iterationUrl(runId, iteration, `${label}-${x.name}`), `${x.name} ${fmt(x.score)}`),
      ),
    ].join(', ');
  const base = report.status.baseEval;
  const rows: string[][] = [
    [
      '-',
      'base model',
      '-',
      escapeHtml(report.status.lineage?.startedFrom.name ?? 'the base model'),
      base ? evalLinks(0, 'base', base.score, base.extraSets) : '-',
      '-',
    ],
  ];
  report.status.history.forEach((h, i) => {
    if (!h.candidate) return;
    const m = manifests[i] ?? null;
    const one = (p: PolicyRef) =>
      p.sha256 ? `${p.name} (sha256 ${p.sha256.slice(0, 12)}…, ${p.checkpointKey ?? '-'})` : p.name;
    // A team training an adapter per role: each role's adapter and samples.
    const adapter = h.candidate.roles
      ? Object.entries(h.candidate.roles)
          .map(([role, p]) => `${role}: ${one(p)}${h.roles?.[role] ? `, ${h.roles[role].samples} samples` : ''}`)
          .join('; ')
      : one(h.candidate);
    rows.push([
      link(iterationUrl(runId, h.iteration), h.iteration),
      escapeHtml(h.objective === 'sft' ? 'SFT (rejection sampling)' : String(m?.config.estimator ?? 'policy gradient')),
      link(
        iterationUrl(runId, h.iteration),
        `${h.samples} samples${m ? `, ${m.tokens.trainable} trained tokens, from ${m.counts.rolloutsUsed} rollouts` : ''}`,
      ),
      escapeHtml(adapter),
      h.evalScore === null
        ? escapeHtml(h.evalError ?? 'not evaluated')
        : evalLinks(h.iteration, 'candidate', h.evalScore, h.eval?.extraSets),
      escapeHtml(h.promoted ? 'yes' : 'no'),
    ]);
  });
  return `<h2>Checkpoints</h2>
<p class="meta">Each update's adapter: the batch it trained on → the adapter → its held-out evaluation (links open the rollouts).</p>
<div id="checkpoints">${htmlTable(['iteration', 'objective', 'samples', 'adapter', 'evaluation', 'promoted'], rows)}</div>`;
}

/** Every move of the run's `best` alias, oldest first: a promotion names a new iteration, a rollback an earlier one. */
export function aliasMoves(alias: ModelAlias): { entry: AliasEntry; move: 'promotion' | 'rollback' }[] {
  const seen = new Set<number>();
  return [...alias.history, alias.current].map((entry) => {
    const promotion = entry.iteration !== null && !seen.has(entry.iteration);
    if (entry.iteration !== null) seen.add(entry.iteration);
    return { entry, move: promotion ? 'promotion' : 'rollback' };
  });
}

function promotionsSection(alias: ModelAlias | null): string {
  if (!alias)
    return '<h2>Promotions and rollbacks</h2>\n<p id="promotions">Nothing promoted yet: the base model serves.</p>';
  const moves = aliasMoves(alias);
  const rows = moves.map(({ entry: e, move }, i) => {
    return [
      escapeHtml(e.at),
      escapeHtml(move),
      escapeHtml(e.iteration ?? 'base'),
      escapeHtml(policyLabel(e.policy)),
      escapeHtml(fmt(e.score)),
      escapeHtml(i === moves.length - 1 ? `current (served as ${alias.servedAs})` : ''),
    ];
  });
  return `<h2>Promotions and rollbacks</h2>
<div id="promotions">${htmlTable(['at', 'move', 'iteration', 'policy', 'held-out score', ''], rows, [4])}</div>`;
}

export function runPage(view: RunView, ctx: PageContext): string {
  const crumbs: [string, string][] = [[runUrl(view.report.runId), view.report.runId]];
  const temporal = `<p class="meta">${link(temporalRunUrl(ctx, view.report.runId), 'This run in Temporal Web')}</p>`;
  if (view.kind === 'apo') {
    const chart = liveChart(view.report.runId, apoCurveData(view.report), view.report.timing.state === 'RUNNING');
    return page(
      `Prompt optimisation ${view.report.runId}`,
      crumbs,
      `${temporal}\n<h2>Validation per round</h2>\n${chart.html}\n<div id="live">${apoReportSections(view.report, null)}</div>`,
      chart.script,
    );
  }
  const { report, manifests } = view;
  const chart = liveChart(report.runId, curveData(report), report.timing.state === 'RUNNING');
  const rows = report.status.history.map((h, i) => {
    const m = manifests[i] ?? null;
    const t = h.trainMetrics ?? {};
    return [
      link(iterationUrl(report.runId, h.iteration), h.iteration),
      escapeHtml(h.rollouts),
      escapeHtml(h.infraFailed),
      escapeHtml(h.rollouts - h.infraFailed),
      escapeHtml(h.samples),
      escapeHtml(h.tokens),
      escapeHtml(fmt(m?.mergeRate ?? null, 2)),
      escapeHtml(m ? dropsText(m.drops) : '-'),
      escapeHtml(fmt(h.meanReward)),
      escapeHtml(fmt(t.loss, 4)),
      escapeHtml(fmt(t.kl, 4)),
      escapeHtml(fmt(t.clip_frac, 3)),
      escapeHtml(fmt(t.grad_norm, 3)),
      escapeHtml(fmt(h.timeline.seconds.update ?? null, 0)),
      escapeHtml(h.candidate ? `${policyLabel(h.candidate)}${h.promoted ? ' (promoted)' : ''}` : '-'),
    ];
  });
  const details = rows.length
    ? htmlTable(
        [
          'iteration',
          'rollouts',
          'infra failed',
          'scored',
          'samples',
          'tokens',
          'merge rate',
          'drops by reason',
          'mean reward',
          'loss',
          'KL',
          'clip fraction',
          'grad norm',
          'update s',
          'checkpoint',
        ],
        rows,
        [1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13],
      )
    : '<p>No iteration has finished yet.</p>';
  return page(
    `Run ${report.runId}`,
    crumbs,
    `${temporal}\n<h2>Learning curve</h2>\n${chart.html}\n<div id="live"><h2>Iteration details</h2>\n<div id="iterations">${details}</div>\n${checkpointsSection(view)}\n${promotionsSection(view.alias)}\n${reportSections(report, null)}</div>`,
    chart.script,
  );
}

/** The rollouts table's query: filters and sort, as the iteration page's URL carries them. */
export interface RolloutQuery {
  group?: string;
  outcome?: string;
  flag?: string;
  sort: 'rollout' | 'group' | 'outcome' | 'reward' | 'flags' | 'seconds' | 'tokens';
  order: 'asc' | 'desc';
  page: number;
}
export const ROLLOUTS_PER_PAGE = 200;
/** The groups table shows at most this many (those without samples first). */
export const GROUPS_SHOWN = 100;

export function filterRollouts(view: IterationView, q: RolloutQuery) {
  const rows = view.rollouts.filter(
    (r) =>
      (!q.group || r.groupId === q.group) &&
      (!q.outcome || r.outcome === q.outcome) &&
      (!q.flag || (q.flag === 'any' ? r.flags.length > 0 : r.flags.includes(q.flag))),
  );
  const key = (r: IterationView['rollouts'][number]): string | number =>
    q.sort === 'reward'
      ? (r.reward ?? -Infinity)
      : q.sort === 'group'
        ? r.groupId
        : q.sort === 'outcome'
          ? r.outcome
          : q.sort === 'flags'
            ? r.flags.length
            : q.sort === 'seconds'
              ? (r.durationMs ?? -Infinity)
              : q.sort === 'tokens'
                ? (r.completionTokens ?? -Infinity)
                : r.rolloutId;
  const dir = q.order === 'desc' ? -1 : 1;
  rows.sort((a, b) => {
    const ka = key(a);
    const kb = key(b);
    // Ties in rollout order whichever way the column sorts, so pages do not reshuffle.
    return (ka < kb ? -1 : ka > kb ? 1 : 0) * dir || a.rolloutId.localeCompare(b.rolloutId);
  });
  return rows;
}

export function iterationPage(view: IterationView, q: RolloutQuery): string {
  const all = filterRollouts(view, q);
  const pages = Math.max(1, Math.ceil(all.length / ROLLOUTS_PER_PAGE));
  const pageNo = Math.min(q.page, pages);
  const shown = all.slice((pageNo - 1) * ROLLOUTS_PER_PAGE, pageNo * ROLLOUTS_PER_PAGE);
  const base = iterationUrl(view.runId, view.iteration, view.set);
  const qs = (over: Partial<RolloutQuery>) => {
    const merged = { ...q, ...over };
    const p = new URLSearchParams();
    for (const [k, v] of Object.entries(merged)) if (v !== undefined && v !== '') p.set(k, String(v));
    return `${base}?${p.toString()}`;
  };
  const sortLink = (col: RolloutQuery['sort'], text: string) =>
    link(qs({ sort: col, order: q.sort === col && q.order === 'asc' ? 'desc' : 'asc', page: 1 }), text);
  const outcomes = [...new Set(view.rollouts.map((r) => r.outcome))].sort();
  const groupIds = [...new Set(view.rollouts.map((r) => r.groupId))].sort();
  const flags = [...new Set(view.rollouts.flatMap((r) => r.flags))].sort();
  const option = (value: string, current: string | undefined, text = value) =>
    `<option value="${escapeHtml(value)}"${current === value ? ' selected' : ''}>${escapeHtml(text)}</option>`;
  const filters = `<form class="filters" method="get" action="${escapeHtml(base)}">
<label>group <select name="group">${option('', q.group, 'all')}${groupIds.map((g) => option(g, q.group)).join('')}</select></label>
<label>outcome <select name="outcome">${option('', q.outcome, 'all')}${outcomes.map((o) => option(o, q.outcome)).join('')}</select></label>
<label>flag <select name="flag">${option('', q.flag, 'all')}${option('any', q.flag, 'any flag')}${flags.map((f) => option(f, q.flag)).join('')}</select></label>
<input type="hidden" name="sort" value="${escapeHtml(q.sort)}"><input type="hidden" name="order" value="${escapeHtml(q.order)}">
<button type="submit">filter</button></form>`;
  const rolloutRows = shown.map((r) => [
    link(rolloutUrl(view.runId, view.iteration, r.rolloutId, view.set), r.rolloutId),
    escapeHtml(r.groupId),
    escapeHtml(r.taskId),
    escapeHtml(r.taskKind ?? '-'),
    escapeHtml(r.outcome),
    escapeHtml(fmt(r.reward)),
    escapeHtml(
      Object.entries(r.parts)
        .map(([k, v]) => `${k} ${fmt(v, 2)}`)
        .join(', ') || '-',
    ),
    escapeHtml(r.flags.join(', ') || '-'),
    escapeHtml(r.durationMs === undefined ? '-' : fmt(r.durationMs / 1000, 1)),
    escapeHtml(r.calls ?? '-'),
    escapeHtml(r.completionTokens ?? '-'),
    escapeHtml(view.trained.has(r.rolloutId) ? 'yes' : 'no'),
    escapeHtml(r.error ?? ''),
  ]);
  const pager =
    pages > 1
      ? `<p class="meta">page ${pageNo} of ${pages}${pageNo > 1 ? ` ${link(qs({ page: pageNo - 1 }), 'previous')}` : ''}${pageNo < pages ? ` ${link(qs({ page: pageNo + 1 }), 'next')}` : ''}</p>`
      : '';
  // Groups that gave no samples first (why is the question), then the rest; a long list is cut, the filter reaches all.
  const shownGroups = [...view.groups.filter((g) => !g.samples), ...view.groups.filter((g) => g.samples)].slice(
    0,
    GROUPS_SHOWN,
  );
  const groupRows = shownGroups.map((g) => [
    link(qs({ group: g.groupId, page: 1 }), g.groupId),
    escapeHtml(g.rollouts),
    escapeHtml(g.scored),
    escapeHtml(fmt(g.mean)),
    escapeHtml(g.min === null ? '-' : `${fmt(g.min)} … ${fmt(g.max)}`),
    escapeHtml(g.samples ? 'yes' : 'no'),
    escapeHtml(g.why ?? ''),
  ]);
  const m = view.manifest;
  const evaluation = view.set !== TRAIN_SET;
  const manifestLine = evaluation
    ? `<p class="meta">Held-out evaluation <b>${escapeHtml(view.set)}</b>: greedy rollouts scored for promotion or report, never trained.</p>`
    : m
      ? `<p class="meta">batch: ${m.counts.samples} samples from ${m.counts.rolloutsUsed} of ${m.counts.rollouts} rollouts, ${m.counts.groupsUsed} of ${m.counts.groups} groups; drops: ${escapeHtml(dropsText(m.drops))}</p>`
      : '<p class="meta">No batch manifest for this iteration.</p>';
  const sets = [TRAIN_SET, ...view.evalSets]
    .map((s) =>
      s === view.set
        ? `<b>${escapeHtml(s === TRAIN_SET ? 'training rollouts' : `evaluation ${s}`)}</b>`
        : link(iterationUrl(view.runId, view.iteration, s), s === TRAIN_SET ? 'training rollouts' : `evaluation ${s}`),
    )
    .join(' · ');
  const iterationCrumb: [string, string] = [iterationUrl(view.runId, view.iteration), `iteration ${view.iteration}`];
  return page(
    `Run ${view.runId}, iteration ${view.iteration}${evaluation ? `, evaluation ${view.set}` : ''}`,
    [
      [runUrl(view.runId), view.runId],
      iterationCrumb,
      ...(evaluation ? [[base, `evaluation ${view.set}`] as [string, string]] : []),
    ],
    `<p class="meta" id="sets">${sets}</p>
${manifestLine}
<h2>Groups</h2>
<p class="meta" id="group-count">${view.groups.filter((g) => !g.samples).length} of ${view.groups.length} groups gave no samples${view.groups.length > GROUPS_SHOWN ? `; the first ${GROUPS_SHOWN} shown, those first` : ''}</p>
${htmlTable(['group', 'rollouts', 'scored', 'mean reward', 'reward range', 'gave samples', 'why not'], groupRows, [1, 2, 3], (i) => (shownGroups[i]!.samples ? '' : 'nosamples'))}
<h2>Rollouts</h2>
${filters}
<p class="meta" id="rollout-count">${all.length} of ${view.rollouts.length} rollouts</p>
${pager}
<div id="rollouts">${htmlTable(
      [
        sortLink('rollout', 'rollout'),
        sortLink('group', 'group'),
        'task',
        'kind',
        sortLink('outcome', 'outcome'),
        sortLink('reward', 'reward'),
        'reward parts',
        sortLink('flags', 'flags'),
        sortLink('seconds', 'seconds'),
        'calls',
        sortLink('tokens', 'tokens'),
        'trained',
        'error',
      ],
      rolloutRows,
      [5, 8, 9, 10],
    )}</div>
${pager}`,
  );
}

/** The engine's token strings, where its answer carried them (chat logprobs content) and they match the ids. */
function tokenPieces(span: Span, count: number): string[] | null {
  const content = (span.response as { choices?: { logprobs?: { content?: { token?: unknown }[] } }[] } | null)
    ?.choices?.[0]?.logprobs?.content;
  if (!Array.isArray(content) || content.length !== count) return null;
  const pieces = content.map((c) => c.token);
  return pieces.every((t): t is string => typeof t === 'string') ? pieces : null;
}

/** Completion tokens coloured by probability (green likely, red unlikely), outlined when trained; ids where no text is known. */
function tokenStrip(span: Span, trained: boolean): string {
  const choice = span.choices[0];
  if (!choice?.tokenIds?.length) return '<p class="meta">No completion tokens recorded.</p>';
  const pieces = tokenPieces(span, choice.tokenIds.length);
  const tokens = choice.tokenIds.map((id, i) => {
    const lp = choice.logprobs?.[i];
    const p = lp === undefined ? null : Math.exp(lp);
    const bg = p === null ? '#eee' : `hsl(${Math.round(120 * p)}, 70%, 85%)`;
    const title = `token ${id}${lp === undefined ? '' : `, logprob ${lp.toFixed(3)}`}${trained ? ', trained' : ''}`;
    const text = pieces ? pieces[i]! : String(id);
    return `<span class="tok${trained ? ' trained' : ''}" style="background:${bg}" title="${escapeHtml(title)}">${escapeHtml(text)}</span>`;
  });
  const what = pieces ? 'tokens' : 'token ids';
  return `<p class="meta">${choice.tokenIds.length} completion tokens${trained ? ', all in the loss (outlined)' : ', not trained'}; ${what} coloured by probability (green likely, red unlikely):</p><div class="msg"><pre>${tokens.join(pieces ? '' : ' ')}</pre></div>`;
}

export function rolloutPage(view: RolloutView): string {
  const r = view.record;
  const summary = htmlTable(
    ['task', 'group', 'attempt', 'outcome', 'reward', 'reward parts', 'flags', 'error'],
    [
      [
        escapeHtml(r.taskId),
        link(`${iterationUrl(view.runId, view.iteration, view.set)}?group=${encodeURIComponent(r.groupId)}`, r.groupId),
        escapeHtml(r.attempt),
        escapeHtml(r.outcome),
        escapeHtml(fmt(r.reward)),
        escapeHtml(
          Object.entries(r.parts)
            .map(([k, v]) => `${k} ${fmt(v, 3)}`)
            .join(', ') || '-',
        ),
        escapeHtml(r.flags.join(', ') || '-'),
        escapeHtml(r.error ?? ''),
      ],
    ],
  );
  const spans = view.spans
    .map((span) => {
      const turn = spanToTurn(span);
      const trained = view.trainedSpans.has(span.spanId);
      const messages = turn.messages
        .map(
          (m) =>
            `<div class="msg ${escapeHtml(m.role)}"><b>${escapeHtml(m.role)}</b><pre>${escapeHtml(m.content)}</pre></div>`,
        )
        .join('\n');
      const meta = [
        span.role ? `role ${span.role}` : null,
        `${span.api}${span.stream ? ' (streamed)' : ''}`,
        `served by ${turn.servedBy}`,
        span.requestedModel ? `asked for ${span.requestedModel}` : null,
        `kind ${span.callKind}`,
        span.promptOverlay ? `prompt overlay v${span.promptOverlay.version}` : null,
        `${span.durationMs.toFixed(0)} ms`,
        turn.finishReason ? `finish ${turn.finishReason}` : null,
        span.usage ? `${span.usage.prompt_tokens} prompt + ${span.usage.completion_tokens} completion tokens` : null,
        span.translation.length ? `translated: ${span.translation.join('; ')}` : null,
      ]
        .filter(Boolean)
        .join(' · ');
      return `<section class="span" data-seq="${span.seq}"><h3>call ${span.seq}${trained ? ' (trained)' : ''}</h3>
<p class="meta">${escapeHtml(meta)}</p>
${messages}
<div class="msg assistant completion"><b>${turn.error ? 'error' : 'engine'}</b><pre>${escapeHtml(turn.error ?? turn.completion)}</pre></div>
${tokenStrip(span, trained)}</section>`;
    })
    .join('\n');
  const log = (name: string, text: string | null) =>
    `<h3>${name}</h3>${text === null ? '<p class="meta">none stored</p>' : `<div class="msg"><pre>${escapeHtml(text)}</pre></div>`}`;
  return page(
    `Rollout ${r.rolloutId}`,
    [
      [runUrl(view.runId), view.runId],
      [iterationUrl(view.runId, view.iteration), `iteration ${view.iteration}`],
      ...(view.set === TRAIN_SET
        ? []
        : [[iterationUrl(view.runId, view.iteration, view.set), `evaluation ${view.set}`] as [string, string]]),
      [rolloutUrl(view.runId, view.iteration, r.rolloutId, view.set), r.rolloutId],
    ],
    `${summary}
<h2>Model calls (${view.spans.length})</h2>
${spans || '<p>No LLM calls were recorded.</p>'}
<h2>Agent logs</h2>
${log('stdout', view.stdout)}
${log('stderr', view.stderr)}`,
  );
}
