import type { Task } from '../contracts/task.js';
import { tamperedFiles } from './protected-files.js';
import { runInWorkdir } from './run-process.js';
import type { SpecOf } from './spec.js';
import { RewardInfraError, type RewardContext, type RewardResult, type RolloutEvidence } from './types.js';
import type { ProtectedSnapshot } from '../contracts/rollout-outcome.js';

/** passed/total from the last match of the pattern (named groups `passed`/`total`, else groups 1 and 2). */
export function passFraction(output: string, pattern: string): number | null {
  let last: RegExpExecArray | null = null;
  for (const m of output.matchAll(new RegExp(pattern, 'g'))) last = m;
  if (!last) return null;
  const passed = Number(last.groups?.passed ?? last[1]);
  const total = Number(last.groups?.total ?? last[2]);
  if (!Number.isFinite(passed) || !Number.isFinite(total) || total <= 0) return null;
  return Math.min(1, Math.max(0, passed / total));
}

/** The argv a command part runs: `{python}` becomes the worker's Python. */
export const commandArgv = (spec: SpecOf<'command'>, python: string | undefined): string[] =>
  spec.command.map((a) => (a === '{python}' && python ? python : a));

/**
 * Run the check in the rollout's workdir. Protected files are re-hashed first: any change scores
 * `tamperPenalty` and the check is not run, since the agent may have rewritten it.
 */
export async function commandReward(
  spec: SpecOf<'command'>,
  _task: Task,
  evidence: RolloutEvidence,
  snapshot: ProtectedSnapshot | undefined,
  ctx?: Pick<RewardContext, 'exec' | 'python' | 'files'>,
): Promise<RewardResult> {
  const workdir = evidence.workdir;
  if (workdir === null) throw new RewardInfraError('command', 'rollout has no workdir to check');
  if (spec.protectedFiles.length > 0) {
    if (!snapshot)
      throw new RewardInfraError(
        'command',
        'protectedFiles set but no snapshot was taken before the rollout (call prepare)',
      );
    const tampered = await tamperedFiles(ctx?.files ?? workdir, spec.protectedFiles, snapshot);
    if (tampered.length > 0) {
      return {
        value: spec.tamperPenalty,
        parts: { command: spec.tamperPenalty },
        flags: tampered.map((p) => `tampered:${p}`),
      };
    }
  }
  let outcome;
  try {
    // Nothing from the operator's environment: the check sees the workdir as HOME and a plain PATH.
    const env = { PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin', HOME: workdir, LANG: 'C.UTF-8' };
    outcome = await (ctx?.exec ?? runInWorkdir(workdir))(commandArgv(spec, ctx?.python), {
      timeoutMs: spec.timeoutMs,
      env,
    });
  } catch (e) {
    throw new RewardInfraError('command', `cannot start ${JSON.stringify(spec.command[0])}: ${(e as Error).message}`, {
      cause: e,
    });
  }
  if (outcome.timedOut) return { value: 0, parts: { command: 0 }, flags: ['check_timed_out'] };
  let raw: number;
  const flags: string[] = [];
  if (spec.passPattern === undefined) {
    raw = outcome.exitCode === 0 ? 1 : 0;
  } else {
    const fraction = passFraction(`${outcome.stdout}\n${outcome.stderr}`, spec.passPattern);
    if (fraction === null) flags.push('no_pass_count');
    raw = fraction ?? 0;
  }
  if (outcome.exitCode !== 0) flags.push(`exit_code:${outcome.exitCode}`);
  return { value: raw * spec.weight, parts: { command: raw }, flags };
}
