import path from 'node:path';
import type { RunConfig } from '../config/run.js';
import { TaskSetError, type Task } from '../contracts/task.js';
import type { ObjectStore } from '../storage/object-store.js';
import { getTaskSet, putTaskSet } from '../storage/task-sets.js';
import { readTaskSet } from './task-set.js';

export interface LoadedTaskSet {
  sha256: string;
  tasks: Task[];
  byId: Map<string, Task>;
}

/**
 * Task sets pinned by content: a run's files are validated and stored once when it starts (`pinFile`), and every
 * later read is by hash from the object store, so a worker needs no task files and an edited file never changes a
 * running run. Pinned sets never change, so they are cached by hash for the worker's lifetime.
 */
export class PinnedTaskSets {
  private readonly cache = new Map<string, Promise<LoadedTaskSet>>();

  constructor(
    private readonly store: Pick<ObjectStore, 'getBytes' | 'putBytes' | 'stat'>,
    private readonly baseDir: string,
  ) {}

  /** Validate a task set file (relative to the worker's base directory) and store it; returns its hash. */
  async pinFile(file: string): Promise<LoadedTaskSet> {
    const tasks = await readTaskSet(path.resolve(this.baseDir, file));
    const { sha256 } = await putTaskSet(this.store, tasks);
    const loaded = { sha256, tasks, byId: new Map(tasks.map((t) => [t.id, t])) };
    this.cache.set(sha256, Promise.resolve(loaded));
    return loaded;
  }

  /**
   * The pinned set with this hash, from the object store (checked against the hash and the task contract). A run
   * config with no hash was started before task sets were pinned: it cannot continue reproducibly (TaskSetError).
   */
  load(sha256: string | null | undefined): Promise<LoadedTaskSet> {
    if (typeof sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(sha256))
      return Promise.reject(
        new TaskSetError(
          `no pinned task set (got ${JSON.stringify(sha256)}): the run config's tasks.trainSet/evalSet are filled in when the run starts; restart runs started before task pinning`,
        ),
      );
    let hit = this.cache.get(sha256);
    if (!hit) {
      hit = getTaskSet(this.store, sha256).then((tasks) => ({
        sha256,
        tasks,
        byId: new Map(tasks.map((t) => [t.id, t])),
      }));
      // A failed read (store down, not pinned yet) is not cached: the next call asks again.
      hit.catch(() => this.cache.delete(sha256));
      this.cache.set(sha256, hit);
    }
    return hit;
  }
}

export type RunTasks = RunConfig['tasks'];
/** trainSet is undefined only for a tasks.trainPrefix run: it pins its train set when it takes the new tasks (planRun). */
export type PinnedRunTasks = RunTasks & { trainSet: string | undefined; evalSet: string };

/**
 * A run's task sets by hash: a set the config names by hash must be in the object store (checked now), a file is
 * validated and pinned now. A TaskSetError names the config field (`tasks.trainFile: …`, `tasks.evalSet: …`).
 */
export async function pinRunTasks(taskSets: PinnedTaskSets, tasks: RunTasks): Promise<PinnedRunTasks> {
  const trainSet =
    tasks.trainPrefix && !tasks.trainSet ? undefined : await pinOne(taskSets, tasks.trainSet, tasks.trainFile, 'train');
  const evalSet = await pinOne(taskSets, tasks.evalSet, tasks.evalFile, 'eval');
  return { ...tasks, trainSet, evalSet };
}

export type ExtraEvalSets = RunConfig['eval']['extraSets'];

/** eval.extraSets pinned like the run's task sets: each gets its `set` hash; errors name the field (`eval.extraSets.0.file: …`). */
export async function pinExtraEvalSets(
  taskSets: PinnedTaskSets,
  sets: ExtraEvalSets | undefined,
): Promise<(ExtraEvalSets[number] & { set: string })[]> {
  const pinned = [];
  for (const [i, x] of (sets ?? []).entries()) {
    pinned.push({
      ...x,
      set: await pinOne(taskSets, x.set, x.file, 'eval', `eval.extraSets.${i}.${x.set ? 'set' : 'file'}`),
    });
  }
  return pinned;
}

/** The whole run config with every task set pinned (tasks.* and eval.extraSets). */
export async function pinRunConfig(taskSets: PinnedTaskSets, config: RunConfig): Promise<RunConfig> {
  const tasks = await pinRunTasks(taskSets, config.tasks);
  return {
    ...config,
    tasks,
    eval: { ...config.eval, extraSets: await pinExtraEvalSets(taskSets, config.eval.extraSets) },
  };
}

async function pinOne(
  taskSets: PinnedTaskSets,
  hash: string | undefined,
  file: string | undefined,
  which: 'train' | 'eval',
  named?: string,
): Promise<string> {
  const field = named ?? `tasks.${which}${hash ? 'Set' : 'File'}`;
  try {
    if (hash) return (await taskSets.load(hash)).sha256;
    if (file === undefined) throw new TaskSetError(`required: a task file, unless ${which}Set names a pinned set`);
    return (await taskSets.pinFile(file)).sha256;
  } catch (err) {
    if (err instanceof TaskSetError) throw new TaskSetError(`${field}: ${err.message}`);
    throw err;
  }
}
