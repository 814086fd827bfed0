import { condition, setHandler, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { RunConfig } from '../config/run.js';
import type { PromptOverlay } from '../contracts/prompt-overlay.js';
import type { ProposeOverlaysInput } from '../activities/prompt-proposals.js';
import { apoActivities } from './apo-activities.js';
import { BestScoreKey, IterationKey, pauseSignal, PhaseKey, resumeSignal, RunIdKey } from './definitions.js';
import {
  apoStatusQuery,
  type ApoPhase,
  type ApoRoundSummary,
  type ApoStatus,
  type VersionScore,
} from './prompt-optimization-types.js';
import { validation } from './proxies.js';
import { setRunDetails } from './run-details.js';
import { runIdFromWorkflowId } from './run-id.js';
import { sampleTaskIds } from './sampling.js';
import { evalSetOf, scoringSampling, trainSetOf } from './rollout-inputs.js';

/** Higher score first; on a tie the lower (older, simpler) version wins, so selection is deterministic. */
const byScore = (a: VersionScore, b: VersionScore) => b.score - a.score || a.version - b.version;

/**
 * Automatic prompt optimisation (`volt optimize-prompt`): a beam search over prompt overlays the gateway applies to
 * the agent's calls; the model and the agent stay unchanged. Validation tasks are the last apo.validationTasks of
 * tasks.trainFile; tasks.evalFile is only used for the held-out scores before and after. The iteration number in
 * storage keys is the round (0 = held-out and start scoring). All scoring is greedy (mode 'eval').
 */
export async function promptOptimization(rawConfig: RunConfig): Promise<ApoStatus> {
  let phase: ApoPhase = 'validating';
  let paused = false;
  let config: RunConfig = rawConfig;
  const status: ApoStatus = {
    kind: 'promptOptimization',
    runId: rawConfig.runId,
    round: 0,
    rounds: rawConfig.apo?.rounds ?? 0,
    phase,
    paused,
    beam: [],
    baselineScore: null,
    best: null,
    history: [],
    heldOut: { before: null, after: null, afterVersion: null },
    promotion: null,
  };
  setHandler(apoStatusQuery, () => ({ ...status, phase: paused ? 'paused' : phase, paused }));
  setHandler(pauseSignal, () => void (paused = true));
  setHandler(resumeSignal, () => void (paused = false));
  const enter = (p: ApoPhase, detail: string) => {
    phase = p;
    setRunDetails(status.runId, detail);
    upsertSearchAttributes([{ key: PhaseKey, value: p }]);
  };
  // Pause takes effect between rollout batches, never inside one.
  const gate = async () => {
    if (paused) setRunDetails(status.runId, `paused in ${phase}`);
    await condition(() => !paused);
  };

  config = await validation.validateRunConfig(rawConfig);
  const runId = runIdFromWorkflowId(workflowInfo().workflowId);
  if (config.runId !== runId) config = { ...config, runId };
  status.runId = runId;
  upsertSearchAttributes([
    { key: RunIdKey, value: runId },
    { key: PhaseKey, value: phase },
  ]);
  const policy = { name: config.model.base, checkpointKey: null, sha256: null, iteration: null };
  const act = apoActivities(config, policy);
  const { trainIds, validationIds } = await act.splitApoTasks({ config });
  const apo = config.apo!; // splitApoTasks failed non-retryably without it
  status.rounds = apo.rounds;
  // Validation tasks come from the train set but are scored like held-out ones: not trained on, eval sampling.
  const trainSet = trainSetOf(config);
  const evalSet = evalSetOf(config);
  const sampling = scoringSampling(config);

  enter('evaluating-before', `held-out evaluation of the agent's own prompt on ${config.eval.tasks} tasks`);
  const evalIds = await act.listTaskIds({ taskSet: evalSet, limit: config.eval.tasks });
  const heldOut = (version: number) =>
    act.score(
      {
        config,
        iteration: 0,
        mode: 'eval',
        taskSet: evalSet,
        sampling,
        label: `heldout-v${version}`,
        version,
        taskIds: evalIds,
        idPrefix: 'heldout',
      },
      `held-out: v${version} on ${evalIds.length} tasks`,
    );
  const before = await heldOut(0);
  status.heldOut.before = before;

  const fullScores = new Map<number, number>();
  const fullScore = async (version: number, round: number): Promise<VersionScore> => {
    let score = fullScores.get(version);
    if (score === undefined) {
      await gate();
      const run = {
        config,
        iteration: round,
        mode: 'eval' as const,
        taskSet: trainSet,
        sampling,
        label: `full-v${version}`,
        version,
        taskIds: validationIds,
        idPrefix: 'full',
      };
      score = await act.score(run, `round ${round}: v${version} on all ${validationIds.length} validation tasks`);
      fullScores.set(version, score);
    }
    return { version, score };
  };
  const bestEver = (): VersionScore =>
    [...fullScores].map(([version, score]) => ({ version, score })).sort(byScore)[0]!;

  enter('scoring-start', 'scoring the start of the beam on the validation set');
  const overlays = new Map<number, PromptOverlay | null>([[0, null]]);
  const start = await act.storeSeedOverlay({ config });
  if (start.overlay) overlays.set(start.version, start.overlay);
  status.baselineScore = (await fullScore(0, 0)).score;
  await fullScore(start.version, 0);
  let beam = [start.version];
  let nextVersion = start.version + 1;
  status.beam = beam;
  status.best = bestEver();
  upsertSearchAttributes([{ key: BestScoreKey, value: status.best.score }]);

  for (let round = 1; round <= apo.rounds; round++) {
    upsertSearchAttributes([{ key: IterationKey, value: round }]);
    enter('training-rollouts', `round ${round}: beam [${beam.join(', ')}] on ${apo.trainBatchSize} training tasks`);
    const batch = sampleTaskIds(trainIds, apo.trainBatchSize, config.seed, round);
    const launched = [];
    const parentOf = new Map<string, number>();
    for (const version of beam) {
      await gate();
      const run = {
        config,
        iteration: round,
        mode: 'train' as const,
        taskSet: trainSet,
        sampling: null,
        label: 'train',
        version,
        taskIds: batch,
        idPrefix: `r${round}`,
      };
      const { results } = await act.launch(run, `round ${round}: v${version} on ${batch.length} training tasks`);
      for (const r of results) parentOf.set(r.rolloutId, version);
      launched.push(...results);
    }
    const train = await act.computeRewards({
      config,
      iteration: round,
      mode: 'train',
      label: 'train',
      taskSet: trainSet,
      results: launched,
    });
    const scored = await act.scoredRollouts({ config, iteration: round, mode: 'train', label: 'train' });

    enter(
      'proposing',
      `round ${round}: proposing ${beam.length * apo.branchFactor} children (${apo.strategies.join(', ')})`,
    );
    const versions = Array.from({ length: beam.length * apo.branchFactor }, (_, i) => nextVersion + i);
    nextVersion += versions.length;
    const proposal: ProposeOverlaysInput = {
      config,
      round,
      parents: beam.map((version) => ({ version, overlay: overlays.get(version) ?? null })),
      rollouts: scored.map((r) => ({
        ref: { runId, iteration: round, rolloutId: r.rolloutId, attempt: r.attempt },
        taskId: r.taskId,
        reward: r.reward,
        parentVersion: parentOf.get(r.rolloutId)!,
      })),
      versions,
    };
    const proposed = await act.proposeOverlays(
      proposal,
      `round ${round}: propose versions ${versions[0]}-${versions.at(-1)}`,
    );
    for (const o of proposed.overlays) overlays.set(o.version, o);
    const children = proposed.overlays.map((o) => o.version);

    enter(
      'scoring-candidates',
      `round ${round}: scoring ${beam.length + children.length} candidates on ${apo.validationBatchSize} validation tasks`,
    );
    const valBatch = sampleTaskIds(validationIds, apo.validationBatchSize, config.seed, 1_000_000 + round);
    const candidates: VersionScore[] = [];
    for (const version of [...beam, ...children]) {
      await gate();
      const run = {
        config,
        iteration: round,
        mode: 'eval' as const,
        taskSet: trainSet,
        sampling,
        label: `val-v${version}`,
        version,
        taskIds: valBatch,
        idPrefix: `r${round}-val`,
      };
      candidates.push({
        version,
        score: await act.score(run, `round ${round}: v${version} on ${valBatch.length} validation tasks`),
      });
    }
    candidates.sort(byScore);
    beam = candidates.slice(0, apo.beamWidth).map((c) => c.version);

    enter('scoring-leader', `round ${round}: scoring leader v${beam[0]} on the full validation set`);
    const leader = await fullScore(beam[0]!, round);
    const best = bestEver();
    const summary: ApoRoundSummary = {
      round,
      parents: status.beam,
      trainMeanReward: train.meanReward,
      trainRollouts: launched.length,
      children,
      skipped: proposed.skipped.map((s) => s.reason),
      candidates,
      beam,
      leader,
      best,
    };
    Object.assign(status, { round, beam, best, history: [...status.history, summary] });
    upsertSearchAttributes([{ key: BestScoreKey, value: best.score }]);
    setRunDetails(
      status.runId,
      `round ${round} done: leader v${leader.version} ${leader.score.toFixed(3)}, best v${best.version} ${best.score.toFixed(3)}`,
    );
  }

  const best = bestEver();
  const baselineScore = fullScores.get(0)!;
  enter('promoting', `promotion: best v${best.version} (${best.score.toFixed(3)}) vs the active prompt`);
  status.promotion = await act.promoteBestPrompt({ config, version: best.version, score: best.score, baselineScore });

  const active = status.promotion.activeVersion;
  enter('evaluating-after', `held-out evaluation of the active prompt v${active}`);
  // Greedy scoring of the same prompt on the same tasks: version 0 was measured before, so it is not run twice.
  const after = active === 0 ? before : await heldOut(active);
  status.heldOut = { before, after, afterVersion: active };
  enter(
    'done',
    `done: held-out ${before.toFixed(3)} → ${after.toFixed(3)} (active v${active}); ${status.promotion.reason}`,
  );
  return { ...status, phase: 'done', paused: false };
}
