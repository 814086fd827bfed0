import { canonicalTaskLines, parseTaskLines, TaskSetError, type Task } from '../contracts/task.js';
import { sha256Bytes } from '../storage/hash.js';
import { keys } from '../storage/keys.js';
import type { ObjectStore } from '../storage/object-store.js';

/** What a run of a lineage takes from its task source: every new task plus some older ones, replayed. */
export interface TaskIntake {
  tasks: Task[];
  newTasks: string[];
  replayTasks: string[];
  /** The new files (object keys), which later runs treat as old. */
  newFiles: string[];
}

type SourceStore = Pick<ObjectStore, 'list' | 'getBytes'>;

/** Every JSONL task file under the prefix, in key order (`volt tasks add` names files so that this is arrival order). */
async function readSource(store: SourceStore, prefix: string): Promise<{ key: string; tasks: Task[] }[]> {
  const files: { key: string; tasks: Task[] }[] = [];
  for await (const { key } of store.list(prefix)) {
    if (!key.endsWith('.jsonl')) continue;
    files.push({ key, tasks: parseTaskLines((await store.getBytes(key)).toString('utf8'), key) });
  }
  return files;
}

/** A per-run order of the older tasks, so each night replays a different (but reproducible) few. */
const replayOrder = (runId: string, id: string) => sha256Bytes(`${runId}\0${id}`);

/**
 * The tasks a run takes: all tasks of files not in `consumed`, plus round(replayShare × new) tasks of consumed
 * files (at most all of them). Null when there is no new file. A task id in two files is an error naming both.
 */
export async function takeTasks(
  store: SourceStore,
  prefix: string,
  consumed: ReadonlySet<string>,
  replayShare: number,
  runId: string,
): Promise<TaskIntake | null> {
  const files = await readSource(store, prefix);
  const seen = new Map<string, string>();
  for (const f of files) {
    for (const t of f.tasks) {
      const other = seen.get(t.id);
      if (other)
        throw new TaskSetError(
          `task id ${t.id} is in both ${other} and ${f.key}; ids must be unique across tasks.trainPrefix`,
        );
      seen.set(t.id, f.key);
    }
  }
  const fresh = files.filter((f) => !consumed.has(f.key));
  if (fresh.length === 0) return null;
  const newTasks = fresh.flatMap((f) => f.tasks);
  const old = files.filter((f) => consumed.has(f.key)).flatMap((f) => f.tasks);
  const replayCount = Math.min(old.length, Math.round(replayShare * newTasks.length));
  const replay = [...old]
    .sort((a, b) => replayOrder(runId, a.id).localeCompare(replayOrder(runId, b.id)))
    .slice(0, replayCount);
  return {
    tasks: [...newTasks, ...replay],
    newTasks: newTasks.map((t) => t.id),
    replayTasks: replay.map((t) => t.id),
    newFiles: fresh.map((f) => f.key),
  };
}

/**
 * Upload validated tasks as a new file of the source, named `<UTC time>-<content hash>.jsonl` so key order is arrival
 * order. Ids already in the source are refused (the night would fail on them), naming the file that has them.
 */
export async function addTaskFile(
  store: SourceStore & Pick<ObjectStore, 'putBytes'>,
  prefix: string,
  tasks: readonly Task[],
  now = new Date(),
): Promise<string> {
  const have = new Map<string, string>();
  for (const f of await readSource(store, prefix)) for (const t of f.tasks) have.set(t.id, f.key);
  const clash = tasks.find((t) => have.has(t.id));
  if (clash)
    throw new TaskSetError(
      `task id ${clash.id} is already in ${have.get(clash.id)}; ids must be unique across ${prefix}`,
    );
  const bytes = canonicalTaskLines(tasks);
  const stamp = now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.(\d+)Z$/, '$1Z');
  const key = keys.taskSourceFile(prefix, `${stamp}-${sha256Bytes(bytes).slice(0, 12)}.jsonl`);
  await store.putBytes(key, bytes, bytes.length, 'application/x-ndjson');
  return key;
}
