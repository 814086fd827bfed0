import { ApplicationFailure } from '@temporalio/activity';
import { ConfigError } from '../config/errors.js';
import { parseRunConfig, type RunConfig } from '../config/run.js';
import { FailureType } from '../contracts/failures.js';
import { TaskSetError } from '../contracts/task.js';
import { pinRunConfig } from '../tasks/pinned-task-sets.js';
import type { ActivityDeps } from './deps.js';
import { failingAs } from './failure-rules.js';

const taskSetRules = [[TaskSetError, FailureType.InvalidTaskSet]] as const;

/** A bad config fails at once, with every bad field's path (the issues in its details for tools). */
function parsed(raw: unknown): RunConfig {
  try {
    return parseRunConfig(raw);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    throw ApplicationFailure.create({
      type: FailureType.InvalidConfig,
      message: err.message,
      nonRetryable: true,
      details: [err.issues],
    });
  }
}

export const createConfigActivities = (deps: Pick<ActivityDeps, 'taskSets'>) => ({
  /**
   * The run's first activity: a config started raw from the Temporal CLI or Web UI is validated here and fails
   * at once, non-retryably, with every bad field's path in the message the operator reads in Temporal Web.
   * Its task sets are validated and pinned by content: the returned config names them by hash (tasks.trainSet/evalSet, eval.extraSets[].set).
   * `volt train` pins them before it starts the run, so a hash is all this checks (it must be in the object store).
   */
  validateRunConfig: (raw: unknown): Promise<RunConfig> =>
    failingAs(taskSetRules, () => pinRunConfig(deps.taskSets, parsed(raw))),

  /** Task ids of a pinned task set, in file order (`limit` keeps the first N, e.g. a fixed eval subset). */
  listTaskIds: (input: { taskSet: string | null; limit?: number }): Promise<string[]> =>
    failingAs(taskSetRules, async () => {
      const { tasks } = await deps.taskSets.load(input.taskSet);
      return tasks.slice(0, input.limit ?? tasks.length).map((t) => t.id);
    }),
});
