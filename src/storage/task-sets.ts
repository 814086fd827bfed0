import { canonicalTaskLines, parseTaskLines, TaskSetError, type Task } from '../contracts/task.js';
import { CorruptObjectError, ObjectNotFoundError } from './errors.js';
import { sha256Bytes } from './hash.js';
import { keys } from './keys.js';
import type { ObjectStore } from './object-store.js';

type TaskSetObjectStore = Pick<ObjectStore, 'getBytes' | 'putBytes' | 'stat'>;

/** Store validated tasks content-addressed at keys.taskSet(sha256 of their canonical lines); storing them again is a no-op. */
export async function putTaskSet(
  store: TaskSetObjectStore,
  tasks: readonly Task[],
): Promise<{ sha256: string; key: string }> {
  const bytes = canonicalTaskLines(tasks);
  const sha256 = sha256Bytes(bytes);
  const key = keys.taskSet(sha256);
  if (!(await store.stat(key))) await store.putBytes(key, bytes, bytes.length, 'application/x-ndjson');
  return { sha256, key };
}

/** A pinned task set, checked against its hash and the task contract; a missing one is a TaskSetError naming the hash. */
export async function getTaskSet(store: TaskSetObjectStore, sha256: string): Promise<Task[]> {
  const key = keys.taskSet(sha256);
  let bytes: Buffer;
  try {
    bytes = await store.getBytes(key);
  } catch (err) {
    if (err instanceof ObjectNotFoundError)
      throw new TaskSetError(
        `task set ${sha256} is not in the object store (${key}); pin it by starting the run with its files`,
      );
    throw err;
  }
  const got = sha256Bytes(bytes);
  if (got !== sha256) throw new CorruptObjectError(null, key, `content has sha256 ${got}`, { fields: ['(content)'] });
  try {
    return parseTaskLines(bytes.toString('utf8'), key);
  } catch (err) {
    if (err instanceof TaskSetError) throw new CorruptObjectError(null, key, err.message, { cause: err });
    throw err;
  }
}
