import { setHandler, upsertSearchAttributes } from '@temporalio/workflow';
import {
  BestScoreKey,
  pauseSignal,
  phaseSignal,
  resumeSignal,
  rollbackUpdate,
  setHyperParametersUpdate,
  statusQuery,
  type RollbackRequest,
} from './definitions.js';
import { applyHyperParameters, validateHyperParameters } from './hyper-parameters.js';
import { setRunDetails } from './run-details.js';
import { rollbackTarget, validateRollback } from './promotion.js';
import { activitiesFor } from './proxies.js';
import { runStatus, serialised, type RunContext } from './run-context.js';

/** The operator's handles on a run: status, pause/resume, the iterations' phases, hyper-parameters and rollback. */
export function setRunHandlers(run: RunContext): void {
  setHandler(statusQuery, () => runStatus(run));
  setHandler(pauseSignal, () => void (run.paused = true));
  setHandler(resumeSignal, () => void (run.paused = false));
  setHandler(phaseSignal, (p) => void (run.phase = p.phase));
  setHandler(
    setHyperParametersUpdate,
    (patch) => {
      run.config = applyHyperParameters(run.config, patch);
      return patch;
    },
    {
      validator: (patch) => {
        if (!run.validated) throw new Error('the run config is still being validated; try again in a moment');
        validateHyperParameters(run.config, patch);
      },
    },
  );
  // The run is the one owner of "best": rollback moves it here, so the next candidate is compared against it.
  setHandler(rollbackUpdate, (request) => rollback(run, request), {
    validator: (request) => {
      validateRollback(request, run.state);
      const target = rollbackTarget(request, run.state!);
      if (run.config.deploy && target.policy.sha256 === null) {
        throw new Error(
          `rollback: deploy alias ${run.config.deploy.alias} cannot serve the bare base model; roll back to a promoted checkpoint`,
        );
      }
    },
  });
}

async function rollback(run: RunContext, request: RollbackRequest) {
  return serialised(run, async () => {
    const s = run.state!;
    const target = rollbackTarget(request, s);
    await activitiesFor(run.config).rollbackCheckpoint({ config: run.config, to: target });
    s.best = { policy: target.policy, score: target.score };
    s.bestIteration = target.iteration;
    upsertSearchAttributes([{ key: BestScoreKey, value: target.score }]);
    setRunDetails(
      run.config.runId,
      `rolled back: best is ${target.policy.name} (${target.iteration === null ? 'base model' : `iteration ${target.iteration}`}, score ${target.score.toFixed(3)})`,
    );
    return { best: s.best, iteration: target.iteration };
  });
}
