import { connectClient } from '../../client/connect.js';
import { apoStatusLines, isApoStatus } from '../../client/prompt-optimization.js';
import { pauseRun, queryStatus, resumeRun, runHandle, setHyperParameters } from '../../client/runs.js';
import type { HyperParameterPatch } from '../../workflows/definitions.js';
import type { DynamicSamplingSummary, ExtraSetResult, IterationTimeline } from '../../workflows/types.js';
import { formatByKind } from '../../rewards/by-kind.js';
import { policyLabel } from '../../contracts/policy-set.js';
import { UsageError, type Command, type CommandContext } from '../command.js';

async function withRun(
  ctx: CommandContext,
  fn: (client: Awaited<ReturnType<typeof connectClient>>['client'], runId: string) => Promise<void>,
) {
  const runId = ctx.positionals[0];
  if (!runId) throw new UsageError('missing the run id');
  const { client, close } = await connectClient(ctx.env());
  try {
    await fn(client, runId);
    return 0;
  } finally {
    await close();
  }
}

export const pauseCommand: Command = {
  name: 'pause',
  summary: 'pause a run before its next iteration (signal `pause`)',
  help: 'usage: volt pause <runId>   (same as: temporal workflow signal --workflow-id <runId> --name pause)',
  options: {},
  run: (ctx) =>
    withRun(ctx, async (client, runId) => {
      await pauseRun(client, runId);
      ctx.out(`pause sent to ${runId}`);
    }),
};

export const resumeCommand: Command = {
  name: 'resume',
  summary: 'resume a paused run (signal `resume`)',
  help: 'usage: volt resume <runId>   (same as: temporal workflow signal --workflow-id <runId> --name resume)',
  options: {},
  run: (ctx) =>
    withRun(ctx, async (client, runId) => {
      await resumeRun(client, runId);
      ctx.out(`resume sent to ${runId}`);
    }),
};

export const cancelCommand: Command = {
  name: 'cancel',
  summary: 'cancel a run: running agents are killed and the update stops',
  help: 'usage: volt cancel <runId>   (same as: temporal workflow cancel --workflow-id <runId>)',
  options: {},
  run: (ctx) =>
    withRun(ctx, async (client, runId) => {
      await runHandle(client, runId).cancel();
      ctx.out(`cancel requested for ${runId}`);
    }),
};

export const runStatusCommand: Command = {
  name: 'run-status',
  summary: 'show a run: iteration, phase, rewards so far, eval scores, best checkpoint (query `status`)',
  help: 'usage: volt run-status <runId> [--json]   (same as: temporal workflow query --workflow-id <runId> --name status)',
  options: { json: { type: 'boolean', default: false } },
  run: (ctx) =>
    withRun(ctx, async (client, runId) => {
      const s = await queryStatus(client, runId);
      if (ctx.values.json) return ctx.out(JSON.stringify(s, null, 2));
      // A promptOptimization run answers the same `status` query with its own shape.
      if (isApoStatus(s)) return void apoStatusLines(s).forEach((line) => ctx.out(line));
      ctx.out(
        `run ${s.runId}: iteration ${s.iteration}/${s.iterations}, phase ${s.phase}${s.paused ? ' (paused)' : ''}`,
      );
      ctx.out(`best: ${s.best ? `${policyLabel(s.best.policy)} score ${s.best.score.toFixed(3)}` : '-'}`);
      if (s.baseEval) ctx.out(`base eval: ${evalLine(s.baseEval.score, s.baseEval)}`);
      if (s.baseEval?.byKind) ctx.out(`  by task kind: ${formatByKind(s.baseEval.byKind)}`);
      for (const line of extraSetLines(s.baseEval?.extraSets)) ctx.out(`  ${line}`);
      if (s.lineage) {
        const l = s.lineage;
        ctx.out(
          `lineage: ${l.name ?? '-'}${l.alias ? ` (served as ${l.alias})` : ''}; started from ${l.startedFrom.name}${l.startedFrom.sha256 ? ` (${l.startedFrom.sha256.slice(0, 12)})` : ''}`,
        );
        ctx.out(
          `incumbent: ${l.incumbent.name} score ${l.incumbentScore?.toFixed(3) ?? '-'}; tasks: ${l.newTasks.length} new, ${l.replayTasks.length} replayed`,
        );
      }
      if (s.outcome === 'no-new-tasks')
        ctx.out("outcome: no new tasks since the lineage's previous run; nothing trained");
      ctx.out(
        `rollout sandbox: ${s.sandbox === 'none' ? 'NONE (rollouts.sandbox: "none": agents run unisolated)' : s.sandbox}`,
      );
      for (const h of s.history) {
        const evalText = h.evalError
          ? `incomplete (${h.evalError})`
          : h.evalScore === null
            ? '-'
            : evalLine(h.evalScore, h.eval);
        ctx.out(
          `  iter ${h.iteration}${h.objective === 'sft' ? ' (sft)' : ''}: reward ${h.meanReward.toFixed(3)}, samples ${h.samples}, eval ${evalText}${h.promoted ? ' promoted' : ''}`,
        );
        for (const [role, r] of Object.entries(h.roles ?? {}))
          ctx.out(
            `    role ${role}: samples ${r.samples}, ${r.candidate ? `adapter ${r.candidate.name}` : 'no update (adapter kept)'}`,
          );
        if (h.dynamicSampling) ctx.out(`    dynamic sampling: ${dynamicSamplingText(h.dynamicSampling)}`);
        ctx.out(`    seconds: ${timelineText(h.timeline)}`);
        if (h.eval?.byKind) ctx.out(`    eval by task kind: ${formatByKind(h.eval.byKind)}`);
        for (const line of extraSetLines(h.eval?.extraSets)) ctx.out(`    ${line}`);
      }
    }),
};

/** eval.extraSets, one line each: "set b (not for promotion): 0.100 = 3.00/30 scored of 30 tasks; word 0.100 (3/30)". */
function extraSetLines(sets: ExtraSetResult[] | undefined): string[] {
  return (sets ?? []).map(
    (x) =>
      `set ${x.name} (not for promotion): ${x.error ? `incomplete (${x.error})` : evalLine(x.score ?? 0, x)}${x.byKind ? `; ${formatByKind(x.byKind)}` : ''}`,
  );
}

/** "rollouts 95, rewards 2, batch 3, update 61, evaluating 80; ended 2026-12-02T06:05:12.000Z". */
function timelineText(t: IterationTimeline): string {
  const parts = Object.entries(t.seconds).map(([phase, s]) => `${phase} ${Math.round(s)}`);
  return `${parts.join(', ')}; ended ${t.endedAt}`;
}

/** "2 extra rounds, +4 groups (+32 rollouts); informative groups 1 → 4 of 4 wanted". */
function dynamicSamplingText(d: DynamicSamplingSummary): string {
  return `${d.extraRounds} extra rounds, +${d.extraGroups} groups (+${d.extraRollouts} rollouts); informative groups ${d.informativeBefore} → ${d.informative} of ${d.wanted} wanted`;
}

/** A score with its numerator and denominator: "0.500 = 2.00/4 scored of 4 tasks". */
function evalLine(
  score: number,
  counts: { rewardSum: number; scored: number; tasks: number } | null | undefined,
): string {
  return counts
    ? `${score.toFixed(3)} = ${counts.rewardSum.toFixed(2)}/${counts.scored} scored of ${counts.tasks} tasks`
    : score.toFixed(3);
}

export const tuneCommand: Command = {
  name: 'tune',
  summary: 'change hyper-parameters of a running run between iterations (update `setHyperParameters`)',
  help: 'usage: volt tune <runId> --set lr=1e-5 --set klCoef=0.01\nTunable: lr, klCoef, epochs, clipLow, clipHigh, groupSize, tasksPerIteration, promoteMargin. The run config with the\nchanges applied must pass the run config rules (src/config/run-rules.ts), or the update is rejected, naming each field.',
  options: { set: { type: 'string', multiple: true } },
  run: (ctx) =>
    withRun(ctx, async (client, runId) => {
      const patch: Record<string, number> = {};
      for (const kv of (ctx.values.set as string[] | undefined) ?? []) {
        const [k, v] = kv.split('=');
        if (!k || v === undefined || !Number.isFinite(Number(v)))
          throw new UsageError(`--set expects name=number, got ${JSON.stringify(kv)}`);
        patch[k] = Number(v);
      }
      const applied = await setHyperParameters(client, runId, patch as HyperParameterPatch);
      ctx.out(`applied from the next iteration: ${JSON.stringify(applied)}`);
    }),
};
