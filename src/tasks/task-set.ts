import { readFile } from 'node:fs/promises';
import { parseTaskLines, TaskSetError, type Task } from '../contracts/task.js';

/** Read a task set file; errors name the file, line and field. */
export async function readTaskSet(file: string): Promise<Task[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    throw new TaskSetError(`cannot read task set ${file}: ${(e as Error).message}`);
  }
  return parseTaskLines(text, file);
}
