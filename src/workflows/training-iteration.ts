import {
  ApplicationFailure,
  ChildWorkflowFailure,
  executeChild,
  getExternalWorkflowHandle,
  setCurrentDetails,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { policyLabel, rolePolicy, separatelyTrained, teamPolicy } from '../contracts/policy-set.js';
import type { PolicyRef } from '../contracts/policy.js';
import type { IterationBatch } from '../batches/iteration-batch.js';
import { sampleUntilInformative } from './dynamic-sampling.js';
import { evaluation } from './evaluation.js';
import { FailureType } from '../contracts/failures.js';
import { phaseSignal, PhaseKey } from './definitions.js';
import { activitiesFor } from './proxies.js';
import { trainSetOf } from './rollout-inputs.js';
import { sampleTaskIds } from './sampling.js';
import type {
  DynamicSamplingSummary,
  IterationSummary,
  RoleUpdate,
  IterationTimeline,
  Phase,
  TimedPhase,
  TrainingIterationInput,
  TrainingIterationResult,
} from './types.js';

/**
 * One training iteration: sample tasks → launch rollouts (a GRPO group per task) → rewards → batch → update on
 * volt-gpu → evaluate the candidate on held-out tasks. Rollouts always come from the latest policy (on-policy); the
 * run, which owns "best", decides whether the candidate is promoted.
 */
type RoleBatch = IterationBatch & { role: string | undefined };
type Update = { policy: PolicyRef; metrics: Record<string, number> } | null;

/** One trained role's line of the summary: its batch, and its update (null: no samples, its adapter kept). */
const roleUpdate = (b: RoleBatch, u: Update): RoleUpdate => ({
  samples: b.samples,
  tokens: b.tokens,
  candidate: u?.policy ?? null,
  trainMetrics: u?.metrics ?? null,
});

export async function trainingIteration(input: TrainingIterationInput): Promise<TrainingIterationResult> {
  const { config, iteration, policy } = input;
  const act = activitiesFor(config);
  const parent = workflowInfo().parent;

  // Date.now() in a workflow is the workflow task's time: the same on replay.
  const timeline: IterationTimeline = { seconds: {}, endedAt: '' };
  let current: { phase: Phase; since: number } | null = null;
  const clock = (next: Phase) => {
    const now = Date.now();
    if (current && current.phase !== 'done') {
      const key = current.phase as TimedPhase;
      timeline.seconds[key] = Math.round(((timeline.seconds[key] ?? 0) + (now - current.since) / 1000) * 10) / 10;
    }
    current = { phase: next, since: now };
    if (next === 'done') timeline.endedAt = new Date(now).toISOString();
  };
  const phase = async (p: Phase, detail: string) => {
    clock(p);
    setCurrentDetails(`iteration ${iteration}: ${detail}`);
    upsertSearchAttributes([{ key: PhaseKey, value: p }]);
    if (parent)
      await getExternalWorkflowHandle(parent.workflowId, parent.runId).signal(phaseSignal, {
        iteration,
        phase: p,
        detail,
      });
  };

  await phase('sampling-tasks', 'sampling tasks');
  const taskSet = trainSetOf(config);
  const ids = await act.listTaskIds({ taskSet });
  // The whole seeded order: its first tasksPerIteration are the iteration's tasks, the rest feed dynamic sampling.
  const order = sampleTaskIds(ids, ids.length, config.seed, iteration);
  const picked = order.slice(0, config.rollouts.tasksPerIteration);
  const tasks = picked.map((taskId, t) => ({
    taskId,
    groupId: `g${t}`,
    rolloutIds: Array.from({ length: config.rollouts.groupSize }, (_, k) => `g${t}-r${k}`),
  }));

  const unsandboxed =
    config.rollouts.runner === 'local' && config.rollouts.sandbox === 'none'
      ? ' (UNSANDBOXED: rollouts.sandbox is "none")'
      : '';
  await phase(
    'rollouts',
    `${tasks.length} tasks × ${config.rollouts.groupSize} rollouts with ${policyLabel(policy)}${unsandboxed}`,
  );
  await act.servePolicy({ policy });
  const launched = await act.launchRollouts({
    config,
    iteration,
    mode: 'train',
    label: 'train',
    policy,
    taskSet,
    sampling: null,
    tasks,
  });

  await phase('rewards', `scoring ${launched.results.length} rollouts`);
  let rewards = await act.computeRewards({
    config,
    iteration,
    mode: 'train',
    label: 'train',
    taskSet,
    results: launched.results,
  });
  let rollouts = launched.results.length;
  let dynamicSampling: DynamicSamplingSummary | null = null;
  if (config.rollouts.dynamicSampling) {
    const sampled = await sampleUntilInformative(
      act,
      { config, iteration, policy, taskSet, order, tasks, results: launched.results, rewards },
      (detail) => phase('rollouts', detail),
    );
    ({ rewards, summary: dynamicSampling } = sampled);
    rollouts = sampled.results.length;
  }

  await phase('batch', `mean reward ${rewards.meanReward.toFixed(3)}; building batch`);
  // A team with several trained roles: a batch and an update per role (each its own adapter); else one of each.
  const roles = separatelyTrained(config.team);
  const batches: RoleBatch[] = [];
  for (const role of roles ?? [undefined]) {
    const batch = await act.buildBatch({ config, iteration, rewardsKey: rewards.rewardsKey, role });
    batches.push({ role, ...batch });
  }
  const samples = batches.reduce((n, b) => n + b.samples, 0);

  const summary: IterationSummary = {
    iteration,
    rollouts,
    infraFailed: rewards.infraFailed,
    meanReward: rewards.meanReward,
    samples,
    tokens: batches.reduce((n, b) => n + b.tokens, 0),
    candidate: null,
    evalScore: null,
    eval: null,
    evalError: null,
    promoted: false,
    trainMetrics: null,
    // batchConfigFor's rule, written out: workflow code keeps zod (the config module) out of its bundle.
    objective:
      iteration < config.batch.warmStartIterations || config.batch.estimator === 'rejection_sampling'
        ? 'sft'
        : 'policy_gradient',
    dynamicSampling,
    timeline,
    ...(roles && { roles: Object.fromEntries(batches.map((b) => [b.role!, roleUpdate(b, null)])) }),
  };
  if (samples === 0) {
    // Every group had zero reward variance (or was dropped): no signal to learn from, keep the policy.
    await phase('done', `no trainable samples (${batches.map((b) => b.dropReasons).join('; ')}); policy unchanged`);
    return { summary, policy };
  }

  const how = summary.objective === 'sft' ? 'supervised update (rejection sampling)' : 'update';
  const what = batches
    .filter((b) => b.samples > 0)
    .map((b) => `${b.role ? `${b.role}: ` : ''}${b.samples} samples, ${b.tokens} tokens`)
    .join('; ');
  await phase('update', `${how} on ${what}`);
  // Independent updates (volt-gpu activities), one per trained policy with samples; a role without keeps its adapter.
  const updates = await Promise.all(
    batches.map((b) =>
      b.samples === 0
        ? null
        : act.trainPolicy({
            config,
            iteration,
            policy: b.role ? rolePolicy(policy, b.role) : policy,
            batchKey: b.batchKey,
            role: b.role,
          }),
    ),
  );
  let candidate: PolicyRef;
  if (roles) {
    summary.roles = Object.fromEntries(batches.map((b, i) => [b.role!, roleUpdate(b, updates[i] ?? null)]));
    const next = batches.map((b, i) => [b.role!, updates[i]?.policy ?? rolePolicy(policy, b.role!)] as const);
    candidate = teamPolicy(Object.fromEntries(next), roles);
    summary.trainMetrics = Object.fromEntries(
      updates.flatMap((u, i) => Object.entries(u?.metrics ?? {}).map(([k, v]) => [`${batches[i]!.role}/${k}`, v])),
    );
  } else {
    candidate = updates[0]!.policy;
    summary.trainMetrics = updates[0]!.metrics;
  }
  summary.candidate = candidate;

  await phase('evaluating', `evaluating ${policyLabel(candidate)}`);
  if (config.eval.everyIterations > 0 && (iteration + 1) % config.eval.everyIterations === 0) {
    const result = await executeChild(evaluation, {
      workflowId: `${workflowInfo().workflowId}-eval`,
      args: [{ config, iteration, label: 'candidate', policy: candidate }],
      staticSummary: `held-out evaluation of ${policyLabel(candidate)}`,
    }).catch((err: unknown) => {
      // Too few tasks scored: the candidate is kept as the policy but never promoted on a score that would lie.
      const cause = err instanceof ChildWorkflowFailure ? err.cause : null;
      if (cause instanceof ApplicationFailure && cause.type === FailureType.EvaluationIncomplete) return cause;
      throw err;
    });
    if (result instanceof ApplicationFailure) summary.evalError = result.message;
    else {
      summary.evalScore = result.score;
      summary.eval = {
        rewardSum: result.rewardSum,
        scored: result.scored,
        tasks: result.tasks,
        ...(result.byKind ? { byKind: result.byKind } : {}),
        ...(result.extraSets ? { extraSets: result.extraSets } : {}),
      };
    }
  }
  await phase(
    'done',
    `mean reward ${rewards.meanReward.toFixed(3)}, eval ${summary.evalError ? 'incomplete' : (summary.evalScore?.toFixed(3) ?? 'skipped')}`,
  );
  return { summary, policy: candidate };
}
