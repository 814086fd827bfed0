import {
  condition,
  continueAsNew,
  executeChild,
  patched,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { RunConfig } from '../config/run.js';
import {
  BestScoreKey,
  IterationKey,
  LineageKey,
  pauseSignal,
  phaseSignal,
  PhaseKey,
  resumeSignal,
  rollbackUpdate,
  RunIdKey,
  setHyperParametersUpdate,
  statusQuery,
} from './definitions.js';
import { evaluation } from './evaluation.js';
import { applyHyperParameters, validateHyperParameters } from './hyper-parameters.js';
import { beatsBest, rollbackTarget, validateRollback } from './promotion.js';
import { activitiesFor, validation } from './proxies.js';
import { trainingIteration } from './training-iteration.js';
import type { Phase, Promotion, RunLineage, RunState, RunStatus, TrainingIterationResult } from './types.js';
import { runIdFromWorkflowId } from './run-id.js';

/**
 * A training run, started with the run config as its only argument (`--input-file run.json`): validate the config (again — it may come raw from the Temporal CLI or Web UI), evaluate the base
 * policy once, then one child `trainingIteration` per iteration until `iterations`, continuing-as-new with the small
 * RunState when Temporal suggests it or every `continueAsNewEvery` iterations.
 */
export async function trainingRun(rawConfig: RunConfig, resumeState?: RunState): Promise<RunStatus> {
  let phase: Phase = 'validating';
  let paused = false;
  let state: RunState | undefined = resumeState;
  let config: RunConfig = rawConfig;
  let iterationsThisRun = 0;
  // Promotion and rollback both move the served alias: one at a time, in the order they were decided.
  let servingBusy = false;
  const serialised = async <T>(fn: () => Promise<T>): Promise<T> => {
    await condition(() => !servingBusy);
    servingBusy = true;
    try {
      return await fn();
    } finally {
      servingBusy = false;
    }
  };
  let validated = false;
  let outcome: RunStatus['outcome'] = 'trained';

  const status = (): RunStatus => ({
    runId: config.runId,
    iteration: state?.iteration ?? 0,
    iterations: config.iterations,
    phase: paused ? 'paused' : phase,
    paused,
    policy: state?.policy ?? null,
    best: state?.best ?? null,
    baseEval: state?.baseEval ?? null,
    meanRewards: state?.history.map((h) => h.meanReward) ?? [],
    evalScores: state?.history.map((h) => h.evalScore) ?? [],
    history: state?.history ?? [],
    sandbox: config.rollouts.sandbox,
    ...(state?.lineage && { lineage: state.lineage }),
    ...(outcome === 'no-new-tasks' && { outcome }),
  });
  setHandler(statusQuery, status);
  setHandler(pauseSignal, () => void (paused = true));
  setHandler(resumeSignal, () => void (paused = false));
  setHandler(phaseSignal, (p) => void (phase = p.phase));
  setHandler(
    setHyperParametersUpdate,
    (patch) => {
      config = applyHyperParameters(config, patch);
      return patch;
    },
    {
      validator: (patch) => {
        // Patches are checked against the validated config, never against a raw one started from the CLI or UI.
        if (!validated) throw new Error('the run config is still being validated; try again in a moment');
        validateHyperParameters(config, patch);
      },
    },
  );
  // The run is the one owner of "best": rollback moves it here, so the next candidate is compared against it.
  setHandler(
    rollbackUpdate,
    (request) =>
      serialised(async () => {
        const s = state!;
        const target: Promotion = rollbackTarget(request, s.promotions!, s.bestIteration ?? null);
        await activitiesFor(config).rollbackCheckpoint({ config, to: target });
        s.best = { policy: target.policy, score: target.score };
        s.bestIteration = target.iteration;
        upsertSearchAttributes([{ key: BestScoreKey, value: target.score }]);
        setCurrentDetails(
          `rolled back: best is ${target.policy.name} (${target.iteration === null ? 'base model' : `iteration ${target.iteration}`}, score ${target.score.toFixed(3)})`,
        );
        return { best: s.best, iteration: target.iteration };
      }),
    {
      validator: (request) => {
        validateRollback(request, state?.promotions, state?.bestIteration);
        if (
          config.deploy &&
          rollbackTarget(request, state!.promotions!, state!.bestIteration ?? null).policy.sha256 === null
        ) {
          throw new Error(
            `rollback: deploy alias ${config.deploy.alias} cannot serve the bare base model; roll back to a promoted checkpoint`,
          );
        }
      },
    },
  );

  // The first activity re-validates: a raw start from the CLI/UI fails here, non-retryably, naming the bad fields.
  config = await validation.validateRunConfig(rawConfig);
  validated = true;
  // The run id is the workflow id, so runs started by a Schedule (id + timestamp) never share storage.
  const runId = runIdFromWorkflowId(workflowInfo().workflowId);
  if (config.runId !== runId) config = { ...config, runId };
  upsertSearchAttributes([{ key: RunIdKey, value: config.runId }]);

  if (!state) {
    const basePolicy = { name: config.model.base, checkpointKey: null, sha256: null, iteration: null };
    let lineage: RunLineage | undefined;
    // Runs that start from a stored policy, belong to a lineage or take tasks from a source plan that first.
    if ((config.lineage || config.model.startFrom || config.tasks.trainPrefix) && patched('lineage-start')) {
      setCurrentDetails(
        config.tasks.trainPrefix ? `taking new tasks from ${config.tasks.trainPrefix}` : 'resolving the start policy',
      );
      const plan = await activitiesFor(config).planRun({ config });
      config = plan.config;
      if (config.lineage) upsertSearchAttributes([{ key: LineageKey, value: config.lineage }]);
      lineage = {
        name: config.lineage ?? null,
        startedFrom: plan.startFrom,
        incumbent: plan.incumbent,
        incumbentScore: null,
        alias: config.deploy?.alias ?? null,
        ...(plan.intake ?? { newTasks: [], replayTasks: [], taskFiles: [] }),
      };
      if (plan.noNewTasks) {
        // Not a failure: the night had nothing to learn from, and the lineage keeps its policy.
        outcome = 'no-new-tasks';
        state = {
          iteration: config.iterations,
          policy: plan.startFrom,
          best: { policy: plan.incumbent, score: 0 },
          history: [],
          promotions: [],
          bestIteration: null,
          lineage,
        };
        if (config.lineage) {
          await activitiesFor(config).recordLineageRun({
            lineage: config.lineage,
            run: lineageRun(config.runId, lineage, null, 'no-new-tasks', null),
          });
        }
        phase = 'done';
        setCurrentDetails(
          `no new tasks under ${config.tasks.trainPrefix} since the lineage's previous run; nothing trained`,
        );
        upsertSearchAttributes([{ key: PhaseKey, value: 'done' }]);
        return status();
      }
    }
    const incumbent = lineage?.incumbent ?? basePolicy;
    const label = incumbent.sha256 ? 'incumbent' : 'base';
    let baseScore = 0; // with evaluation off nothing is ever promoted, so the base's score is never compared
    let baseEval: RunState['baseEval'] = null;
    if (config.eval.everyIterations > 0) {
      phase = 'evaluating-base';
      setCurrentDetails(`evaluating the ${label} policy ${incumbent.name}`);
      const base = await executeChild(evaluation, {
        workflowId: `${config.runId}-eval-${label}`,
        args: [{ config, iteration: 0, label, policy: incumbent }],
        staticSummary: `held-out evaluation of the ${label} policy`,
      });
      baseScore = base.score;
      // Absent in histories recorded before evaluations stored their numerator and denominator.
      if (base.tasks !== undefined)
        baseEval = {
          score: base.score,
          rewardSum: base.rewardSum,
          scored: base.scored,
          tasks: base.tasks,
          ...(base.byKind ? { byKind: base.byKind } : {}),
          ...(base.extraSets ? { extraSets: base.extraSets } : {}),
        };
    }
    state = {
      iteration: 0,
      policy: lineage?.startedFrom ?? basePolicy,
      best: { policy: incumbent, score: baseScore },
      baseEval,
      history: [],
      promotions: [{ policy: incumbent, score: baseScore, iteration: null }],
      bestIteration: null,
      ...(lineage && { lineage: { ...lineage, incumbentScore: config.eval.everyIterations > 0 ? baseScore : null } }),
    };
    upsertSearchAttributes([{ key: BestScoreKey, value: baseScore }]);
  }

  while (state.iteration < config.iterations) {
    if (paused) setCurrentDetails(`paused before iteration ${state.iteration}`);
    await condition(() => !paused);
    const iteration: number = state.iteration;
    upsertSearchAttributes([{ key: IterationKey, value: iteration }]);
    // Runs recorded before rollback existed let the iteration promote; new ones decide here, against the current best.
    const runPromotes = state.promotions !== undefined && patched('run-owns-best');
    const result: TrainingIterationResult = await executeChild(trainingIteration, {
      workflowId: `${config.runId}-iter-${iteration}`,
      args: [
        {
          config,
          iteration,
          policy: state.policy,
          best: state.best,
          ...(runPromotes && { promotion: 'run' as const }),
        },
      ],
      staticSummary: `iteration ${iteration}`,
    });
    if (runPromotes) {
      const { candidate, evalScore } = result.summary;
      const s: RunState = state;
      if (candidate && evalScore !== null) {
        await serialised(async () => {
          if (!beatsBest(evalScore, s.best, config.eval.promoteMargin)) return;
          setCurrentDetails(
            `iteration ${iteration}: promoting ${candidate.name}: ${evalScore.toFixed(3)} > ${s.best.score.toFixed(3)}`,
          );
          await activitiesFor(config).promoteCheckpoint({ config, iteration, policy: candidate, score: evalScore });
          s.best = { policy: candidate, score: evalScore };
          s.bestIteration = iteration;
          s.promotions = [...s.promotions!, { policy: candidate, score: evalScore, iteration }];
          result.summary.promoted = true;
        });
      }
      state = { ...s, iteration: iteration + 1, policy: result.policy, history: [...s.history, result.summary] };
    } else {
      state = {
        ...state,
        iteration: iteration + 1,
        policy: result.policy,
        best: result.best,
        history: [...state.history, result.summary],
      };
    }
    iterationsThisRun += 1;
    upsertSearchAttributes([{ key: BestScoreKey, value: state.best.score }]);
    setCurrentDetails(
      `iteration ${iteration} done: mean reward ${result.summary.meanReward.toFixed(3)}, ` +
        `eval ${result.summary.evalScore?.toFixed(3) ?? '-'}, best ${state.best.score.toFixed(3)} (${state.best.policy.name})`,
    );
    const more = state.iteration < config.iterations;
    if (more && (workflowInfo().continueAsNewSuggested || iterationsThisRun >= config.continueAsNewEvery)) {
      await condition(() => !paused);
      await continueAsNew<typeof trainingRun>(config, state);
    }
  }
  if (state.lineage?.name) {
    const l = state.lineage;
    const promoted = state.best.policy.sha256 !== l.incumbent.sha256 ? state.best.policy : null;
    await activitiesFor(config).recordLineageRun({
      lineage: l.name!,
      run: lineageRun(config.runId, l, promoted, promoted ? 'promoted' : 'kept', config.tasks.trainSet ?? null),
    });
  }
  phase = 'done';
  upsertSearchAttributes([{ key: PhaseKey, value: 'done' }]);
  return status();
}

function lineageRun(
  runId: string,
  l: RunLineage,
  promoted: RunLineage['startedFrom'] | null,
  outcome: 'promoted' | 'kept' | 'no-new-tasks',
  trainSet: string | null,
) {
  return {
    runId,
    startedFrom: l.startedFrom,
    incumbent: l.incumbent,
    incumbentScore: l.incumbentScore,
    promoted,
    outcome,
    trainSet,
    newTasks: l.newTasks.length,
    replayTasks: l.replayTasks.length,
    taskFiles: l.taskFiles,
  };
}
