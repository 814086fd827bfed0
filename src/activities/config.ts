import { ApplicationFailure } from '@temporalio/activity';
import { ConfigError } from '../config/errors.js';
import { parseRunConfig, type RunConfig } from '../config/run.js';
import { FailureType } from '../contracts/failures.js';
import { TaskSetError } from '../tasks/task-set.js';
import type { ActivityDeps } from './deps.js';

export const createConfigActivities = (deps: Pick<ActivityDeps, 'taskSets'>) => ({
  /**
   * The run's first activity: a config started raw from the Temporal CLI or Web UI is validated here and fails
   * at once, non-retryably, with every bad field's path in the message the operator reads in Temporal Web.
   */
  async validateRunConfig(raw: unknown): Promise<RunConfig> {
    let config: RunConfig;
    try {
      config = parseRunConfig(raw);
    } catch (err) {
      if (err instanceof ConfigError) {
        throw ApplicationFailure.create({ type: FailureType.InvalidConfig, message: err.message, nonRetryable: true, details: [err.issues] });
      }
      throw err;
    }
    try {
      await deps.taskSets.load(config.tasks.trainFile);
      await deps.taskSets.load(config.tasks.evalFile);
    } catch (err) {
      const message = err instanceof TaskSetError ? err.message : `tasks: ${(err as Error).message}`;
      throw ApplicationFailure.create({ type: FailureType.InvalidTaskSet, message, nonRetryable: true });
    }
    return config;
  },

  /** Task ids of a task set, in file order (`limit` keeps the first N, e.g. a fixed eval subset). */
  async listTaskIds(input: { file: string; limit?: number }): Promise<string[]> {
    try {
      const { tasks } = await deps.taskSets.load(input.file);
      return tasks.slice(0, input.limit ?? tasks.length).map((t) => t.id);
    } catch (err) {
      if (err instanceof TaskSetError || (err as NodeJS.ErrnoException).code === 'ENOENT') {
        throw ApplicationFailure.create({ type: FailureType.InvalidTaskSet, message: (err as Error).message, nonRetryable: true });
      }
      throw err;
    }
  },
});
