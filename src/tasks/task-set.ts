import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { z } from 'zod';
import type { Task } from '../contracts/task.js';

const taskSchema = z.object({
  id: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/, 'task ids use [A-Za-z0-9_.-]'),
  input: z.record(z.string(), z.unknown()),
  reference: z.record(z.string(), z.unknown()).optional(),
  setup: z.strictObject({ command: z.array(z.string().min(1)).min(1) }).optional(),
});

export class TaskSetError extends Error {
  override name = 'TaskSetError';
}

/** Read a task set (JSON Lines, one task per line); errors name the file, line and field. */
export async function readTaskSet(file: string): Promise<Task[]> {
  const tasks: Task[] = [];
  const seen = new Set<string>();
  let lineNo = 0;
  try {
    for await (const line of createInterface({ input: createReadStream(file), crlfDelay: Infinity })) {
      lineNo += 1;
      if (!line.trim()) continue;
      let raw: unknown;
      try {
        raw = JSON.parse(line);
      } catch (e) {
        throw new TaskSetError(`${file}:${lineNo}: invalid JSON (${(e as Error).message})`);
      }
      const parsed = taskSchema.safeParse(raw);
      if (!parsed.success) {
        const where = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
        throw new TaskSetError(`${file}:${lineNo}: ${where}`);
      }
      if (seen.has(parsed.data.id)) throw new TaskSetError(`${file}:${lineNo}: duplicate task id ${parsed.data.id}`);
      seen.add(parsed.data.id);
      tasks.push(parsed.data);
    }
  } catch (e) {
    if (e instanceof TaskSetError) throw e;
    throw new TaskSetError(`cannot read task set ${file}: ${(e as Error).message}`);
  }
  if (tasks.length === 0) throw new TaskSetError(`task set ${file} is empty`);
  return tasks;
}
