import { mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import type { RunConfig } from '../config/run.js';
import type { ActivePrompt, PromptOverlay } from '../contracts/prompt-overlay.js';
import type { ObjectStore } from '../storage/object-store.js';
import { createPromptOverlayStore } from '../storage/prompt-overlays.js';
import { apoStatusQuery, type ApoStatus } from '../workflows/prompt-optimization-types.js';
import type { CurveData } from './curve-data.js';
import { CURVE_FILE } from './render-html.js';
import { plotCurve, type WrittenReport } from './write-report.js';
import { escapeHtml, fmt, formatDuration, STYLE, table } from './html.js';
import type { RunTiming } from './report-data.js';
import { startInput } from './run-history.js';

/** Everything the report of a promptOptimization run shows: Temporal's status and times, the stored overlays. */
export interface ApoReportData {
  runId: string;
  /** null when the run ended without a result (failed, cancelled): the overlays are still shown. */
  status: ApoStatus | null;
  timing: RunTiming;
  apo: RunConfig['apo'] | null;
  overlays: PromptOverlay[];
  active: ActivePrompt | null;
  generatedAt: string;
}

/** Whether the run is a promptOptimization workflow (false when there is no such run: the training path says so). */
export async function isPromptOptimization(client: Client, runId: string): Promise<boolean> {
  const desc = await client.workflow
    .getHandle(runId)
    .describe()
    .catch(() => null);
  return desc?.type === 'promptOptimization';
}

export async function gatherApoReport(
  client: Client,
  store: ObjectStore,
  runId: string,
  now = new Date(),
): Promise<ApoReportData> {
  const handle = client.workflow.getHandle(runId);
  const desc = await handle.describe();
  const history = await handle.fetchHistory();
  const { config } = startInput(history, client.workflow.options.loadedDataConverter.payloadConverter);
  const state = desc.status.name;
  let status: ApoStatus | null = null;
  if (state === 'RUNNING') {
    status = await handle.query(apoStatusQuery).catch((err: unknown) => {
      throw new Error(
        `run ${runId} is running; its status query failed (is a worker polling ${desc.taskQueue}? \`volt worker\`): ${(err as Error).message}`,
        { cause: err },
      );
    });
  } else if (state === 'COMPLETED') status = (await handle.result()) as ApoStatus;
  const overlays = createPromptOverlayStore(store);
  return {
    runId,
    status,
    timing: { state, startedAt: desc.startTime.toISOString(), closedAt: desc.closeTime?.toISOString() ?? null },
    apo: config?.apo ?? null,
    overlays: await overlays.list(runId),
    active: await overlays.getActive(runId),
    generatedAt: now.toISOString(),
  };
}

/** The curve of an APO run: x = round; "training reward" of the beam, the leader's full-validation score. */
export function apoCurveData(data: ApoReportData): CurveData {
  const rounds = data.status?.history ?? [];
  const start = data.status?.baselineScore ?? null;
  const leader = [
    ...(start === null ? [] : [{ x: 0, y: start }]),
    ...rounds.map((r) => ({ x: r.round, y: r.leader.score })),
  ];
  return {
    title: `prompt optimisation ${data.runId}`,
    iterations: rounds.map((r) => r.round),
    meanReward: rounds.map((r) => r.trainMeanReward),
    evalIterations: leader.map((p) => p.x),
    evalScores: leader.map((p) => p.y),
    baseScore: data.status?.baselineScore ?? null,
    labels: {
      reward: 'training reward of the beam',
      eval: 'leader on the full validation set',
      base: "agent's own prompt (validation)",
      x: 'round',
    },
  };
}

function summary(data: ApoReportData): string {
  const s = data.status;
  const wall = (Date.parse(data.timing.closedAt ?? data.generatedAt) - Date.parse(data.timing.startedAt)) / 1000;
  const apo = data.apo;
  const rows: [string, unknown][] = [
    ['state', `${data.timing.state}${s && data.timing.state === 'RUNNING' ? ` (phase ${s.phase})` : ''}`],
    [
      'search',
      apo
        ? `${apo.rounds} rounds, beam ${apo.beamWidth}, ${apo.branchFactor} children per member, ${apo.strategies.join(' + ')}`
        : '-',
    ],
    [
      'batches',
      apo
        ? `${apo.trainBatchSize} training / ${apo.validationBatchSize} validation tasks per round, ${apo.validationTasks} validation tasks in all`
        : '-',
    ],
    ['rounds done', s ? `${s.round} of ${s.rounds}` : '-'],
    ["validation: agent's own prompt (v0)", fmt(s?.baselineScore)],
    ['validation: best', s?.best ? `v${s.best.version} ${fmt(s.best.score)}` : '-'],
    ['promotion', s?.promotion ? `${s.promotion.promoted ? 'promoted' : 'not promoted'}: ${s.promotion.reason}` : '-'],
    ['held-out before (v0)', fmt(s?.heldOut.before)],
    [
      'held-out after',
      s?.heldOut.afterVersion === null || !s
        ? '-'
        : `${fmt(s.heldOut.after)} (active prompt v${s.heldOut.afterVersion})`,
    ],
    ['wall time', `${formatDuration(wall)}${data.timing.closedAt ? '' : ' so far'}`],
  ];
  return `<table>${rows.map(([k, v]) => `<tr><th>${escapeHtml(k)}</th><td>${escapeHtml(v)}</td></tr>`).join('\n')}</table>`;
}

function roundsTable(s: ApoStatus | null): string {
  if (!s || s.history.length === 0) return '<p>No round has finished yet.</p>';
  const rows = s.history.map((r) => [
    r.round,
    r.parents.map((v) => `v${v}`).join(' '),
    fmt(r.trainMeanReward),
    r.children.map((v) => `v${v}`).join(' ') || '-',
    r.skipped.length,
    r.candidates.map((c) => `v${c.version} ${fmt(c.score)}`).join(', '),
    r.beam.map((v) => `v${v}`).join(' '),
    `v${r.leader.version} ${fmt(r.leader.score)}`,
    `v${r.best.version} ${fmt(r.best.score)}`,
  ]);
  return table(
    [
      'round',
      'parents',
      'train reward',
      'children',
      'skipped',
      'validation batch (best first)',
      'beam kept',
      'leader (full validation)',
      'best so far',
    ],
    rows,
  );
}

function overlaysSection(data: ApoReportData): string {
  if (data.overlays.length === 0) return "<p>No overlay was stored: every rollout used the agent's own prompt.</p>";
  return data.overlays
    .map((o) => {
      const head = `v${o.version}: ${o.origin.strategy} from ${o.origin.parents.map((p) => `v${p}`).join(', ')}${o.origin.round === null ? '' : ` in round ${o.origin.round}`}, mode ${o.mode}${data.active?.version === o.version ? ' — ACTIVE' : ''}`;
      return `<h3>${escapeHtml(head)}</h3><p class="meta">${escapeHtml(o.origin.note)}</p><div class="msg system"><pre>${escapeHtml(o.template)}</pre></div>`;
    })
    .join('\n');
}

/** Everything below the title of a promptOptimization run's page, with `curve` where the curve goes (null: none). */
export function apoReportSections(data: ApoReportData, curve: string | null): string {
  const promotions = data.active?.history.map((h) => [`v${h.version}`, fmt(h.score), h.promotedAt]) ?? [];
  return `${summary(data)}
${curve === null ? '' : `<h2>Validation per round</h2>\n${curve}`}
${roundsTable(data.status)}
<h2>Active prompt</h2>
${promotions.length ? table(['version', 'validation score', 'promoted at'], promotions) : "<p>Nothing was promoted: the agent's own prompt (v0) is active.</p>"}
<h2>Prompt overlays</h2>
${overlaysSection(data)}`;
}

/** The report page of a promptOptimization run (same look as a training run's; curve.png next to it). */
export function renderApoReportHtml(data: ApoReportData, curveFile: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Volt prompt optimisation ${escapeHtml(data.runId)}</title><style>${STYLE}</style></head>
<body>
<h1>Volt prompt optimisation ${escapeHtml(data.runId)}</h1>
<p class="meta">Report generated ${escapeHtml(data.generatedAt)}. Scores are mean rewards of greedy rollouts; validation tasks are the last tasks of the train file, held-out tasks the eval file.</p>
${apoReportSections(data, `<img src="${escapeHtml(curveFile)}" alt="training reward and leader validation score per round" width="800">`)}
</body></html>
`;
}

/** Write index.html, curve.json and curve.png of a promptOptimization run into `dir`. */
export async function writeApoReport(data: ApoReportData, dir: string, python: string): Promise<WrittenReport> {
  await mkdir(dir, { recursive: true });
  const out = {
    html: path.join(dir, 'index.html'),
    png: path.join(dir, CURVE_FILE),
    curveJson: path.join(dir, 'curve.json'),
  };
  await plotCurve(apoCurveData(data), out, python);
  await writeFile(`${out.html}.part`, renderApoReportHtml(data, CURVE_FILE));
  await rename(`${out.html}.part`, out.html);
  return { ...out, headline: [] }; // its summary is the overlays table in index.html
}
