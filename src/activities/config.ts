import { ApplicationFailure } from '@temporalio/activity';
import { ConfigError } from '../config/errors.js';
import { parseRunConfig, type RunConfig } from '../config/run.js';
import { FailureType } from '../contracts/failures.js';
import { TaskSetError } from '../contracts/task.js';
import { pinRunConfig } from '../tasks/pinned-task-sets.js';
import type { ActivityDeps } from './deps.js';

const invalidTaskSet = (err: unknown): unknown => {
  if (err instanceof TaskSetError)
    return ApplicationFailure.create({ type: FailureType.InvalidTaskSet, message: err.message, nonRetryable: true });
  return err;
};

export const createConfigActivities = (deps: Pick<ActivityDeps, 'taskSets'>) => ({
  /**
   * The run's first activity: a config started raw from the Temporal CLI or Web UI is validated here and fails
   * at once, non-retryably, with every bad field's path in the message the operator reads in Temporal Web.
   * Its task sets are validated and pinned by content: the returned config names them by hash (tasks.trainSet/evalSet, eval.extraSets[].set).
   * `volt train` pins them before it starts the run, so a hash is all this checks (it must be in the object store).
   */
  async validateRunConfig(raw: unknown): Promise<RunConfig> {
    let config: RunConfig;
    try {
      config = parseRunConfig(raw);
    } catch (err) {
      if (err instanceof ConfigError) {
        throw ApplicationFailure.create({
          type: FailureType.InvalidConfig,
          message: err.message,
          nonRetryable: true,
          details: [err.issues],
        });
      }
      throw err;
    }
    try {
      return await pinRunConfig(deps.taskSets, config);
    } catch (err) {
      throw invalidTaskSet(err);
    }
  },

  /** Task ids of a pinned task set, in file order (`limit` keeps the first N, e.g. a fixed eval subset). */
  async listTaskIds(input: { taskSet: string | null; limit?: number }): Promise<string[]> {
    try {
      const { tasks } = await deps.taskSets.load(requireTaskSet(input.taskSet));
      return tasks.slice(0, input.limit ?? tasks.length).map((t) => t.id);
    } catch (err) {
      throw invalidTaskSet(err);
    }
  },
});

/**
 * Activities get task sets by hash only. A run whose config has none was started before task sets were pinned
 * (its validateRunConfig result has no hashes): it cannot be continued reproducibly and must be restarted.
 */
export function requireTaskSet(taskSet: string | undefined | null): string {
  if (typeof taskSet === 'string' && /^[0-9a-f]{64}$/.test(taskSet)) return taskSet;
  throw ApplicationFailure.create({
    type: FailureType.InvalidTaskSet,
    message: `no pinned task set (got ${JSON.stringify(taskSet)}): the run config's tasks.trainSet/evalSet are filled in when the run starts; restart runs started before task pinning`,
    nonRetryable: true,
  });
}
