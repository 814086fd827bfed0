import { z } from 'zod';

/** A path inside the rollout's workdir: relative, '/'-separated, no '.', '..' or empty segments. */
export const workdirPathSchema = z
  .string()
  .min(1)
  .max(1024)
  .refine(
    (p) => !p.startsWith('/') && !p.includes('\0') && p.split('/').every((s) => s !== '' && s !== '.' && s !== '..'),
    "a relative path inside the workdir (no leading '/', no '.', '..' or empty segments)",
  );

/**
 * A task of a task set (one JSON object per line of a .jsonl file). Only `id` and `input` reach the agent
 * (as VOLT_TASK); `reference` is what rewards compare against and never leaves Volt.
 */
export const taskSchema = z.object({
  id: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/, 'task ids use [A-Za-z0-9_.-]'),
  input: z.record(z.string(), z.unknown()),
  reference: z.record(z.string(), z.unknown()).optional(),
  /** A label evaluations are also reported by (e.g. "word" vs "plain" problems); never seen by the agent. */
  kind: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, 'task kinds use [A-Za-z0-9_.-], at most 64')
    .optional(),
  /** A command run in the fresh rollout workdir before the agent starts (e.g. seeding a database); never seen by the agent. */
  setup: z.strictObject({ command: z.array(z.string().min(1)).min(1) }).optional(),
  /** Files (workdir path → text) the runner writes into the workdir after the agent exited, for scoring only (hidden tests). */
  hidden: z.strictObject({ files: z.record(workdirPathSchema, z.string()) }).optional(),
});
export type Task = z.output<typeof taskSchema>;

/** sha256 of a task set's canonical JSON Lines (keys.taskSet): how a run config pins the exact tasks it uses. */
export const taskSetHashSchema = z
  .string()
  .regex(/^[0-9a-f]{64}$/, 'a task set hash is 64 lowercase hex digits (sha256)');

export class TaskSetError extends Error {
  override name = 'TaskSetError';
}

/** Parse task set text (JSON Lines, one task per line); errors name the source, line and field. */
export function parseTaskLines(text: string, source: string): Task[] {
  const tasks: Task[] = [];
  const seen = new Set<string>();
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const lineNo = i + 1;
    if (!line.trim()) continue;
    let raw: unknown;
    try {
      raw = JSON.parse(line);
    } catch (e) {
      throw new TaskSetError(`${source}:${lineNo}: invalid JSON (${(e as Error).message})`);
    }
    const parsed = taskSchema.safeParse(raw);
    if (!parsed.success) {
      const where = parsed.error.issues
        .map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`)
        .join('; ');
      throw new TaskSetError(`${source}:${lineNo}: ${where}`);
    }
    if (seen.has(parsed.data.id)) throw new TaskSetError(`${source}:${lineNo}: duplicate task id ${parsed.data.id}`);
    seen.add(parsed.data.id);
    tasks.push(parsed.data);
  }
  if (tasks.length === 0) throw new TaskSetError(`task set ${source} is empty`);
  return tasks;
}

/** The canonical bytes of a task set: one validated task per line, so equal tasks always hash the same. */
export const canonicalTaskLines = (tasks: readonly Task[]): Buffer =>
  Buffer.from(tasks.map((t) => `${JSON.stringify(t)}\n`).join(''));
