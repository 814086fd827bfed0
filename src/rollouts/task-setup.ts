import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { Task } from '../contracts/task.js';
import { resolveAgentCommand } from './agent-command.js';

const run = promisify(execFile);

/**
 * Run a task's `setup` command in the fresh workdir before the agent starts (the agent never builds its own world).
 * A failure rejects, which the runner reports as infra_failed: the agent never got a fair start.
 */
export async function runTaskSetup(task: Task, workdir: string, baseDir: string, timeoutMs = 60_000): Promise<void> {
  if (!task.setup) return;
  const [command, ...args] = resolveAgentCommand(task.setup.command, baseDir);
  try {
    await run(command!, args, {
      cwd: workdir,
      timeout: timeoutMs,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: workdir },
    });
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(
      `task ${task.id} setup ${JSON.stringify(task.setup.command)} failed: ${(e.stderr || e.message).trim().slice(0, 500)}`,
    );
  }
}
