import { existsSync } from 'node:fs';
import path from 'node:path';

/**
 * Agents run in a fresh working directory, so relative paths in `agent.command` that name files under the base
 * directory (the worker's cwd, or `agent.cwd`) are made absolute: `["node_modules/.bin/tsx", "examples/a.ts"]`
 * works from any rollout directory. Flags and bare names (`node`, `python3`, found on PATH) are left alone.
 */
export function resolveAgentCommand(command: readonly string[], baseDir: string): string[] {
  return command.map((arg) => {
    if (arg.startsWith('-') || path.isAbsolute(arg) || !arg.includes('/')) return arg;
    const full = path.resolve(baseDir, arg);
    return existsSync(full) ? full : arg;
  });
}
