import { stat } from 'node:fs/promises';
import path from 'node:path';
import type { Task } from '../contracts/task.js';
import { readTaskSet } from '../tasks/task-set.js';

/** Task sets read once per worker and re-read when the file changes (keyed by path, size and mtime). */
export class TaskSets {
  private cache = new Map<string, { stamp: string; tasks: Task[]; byId: Map<string, Task> }>();

  constructor(private readonly baseDir: string) {}

  async load(file: string): Promise<{ tasks: Task[]; byId: Map<string, Task> }> {
    const full = path.resolve(this.baseDir, file);
    const st = await stat(full);
    const stamp = `${st.size}:${st.mtimeMs}`;
    const hit = this.cache.get(full);
    if (hit && hit.stamp === stamp) return hit;
    const tasks = await readTaskSet(full);
    const entry = { stamp, tasks, byId: new Map(tasks.map((t) => [t.id, t])) };
    this.cache.set(full, entry);
    return entry;
  }
}
