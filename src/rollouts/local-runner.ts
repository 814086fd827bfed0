import { constants } from 'node:fs';
import { mkdir, open, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseFrozen } from '../config/errors.js';
import type { RolloutOutcome, RunnerResult } from '../contracts/rollout.js';
import { assertId, keys } from '../storage/keys.js';
import { localAgentEnv } from './agent-env.js';
import { runAgentProcess, type AgentProcessResult } from './agent-process.js';
import { uploadLogs } from './log-sink.js';
import type { LiveGroups } from './live-groups.js';
import { killByEnv } from './process-group.js';
import { Semaphore } from './semaphore.js';
import { RolloutCancelledError, agentTaskJson, rolloutSpecSchema, type LogSink, type RolloutRunner, type RolloutSpec, type RolloutSpecInput, type RunOptions } from './spec.js';

export interface LocalRunnerOptions {
  /** Attempts live under `<root>/<run>/<iteration>/<rollout>/attempt-N`, e.g. `<dataDir>/rollouts`. */
  root: string;
  logs: LogSink;
  /** Most agents this runner instance runs at once. */
  concurrency?: number;
  killGraceMs?: number;
  drainMs?: number;
  headBytes?: number;
  tailBytes?: number;
  /** Most bytes of VOLT_OUTPUT_FILE put into the result. */
  maxOutputBytes?: number;
  /** The worker environment allow-listed variables are copied from. */
  parentEnv?: NodeJS.ProcessEnv;
  /** Record of the agents running on this machine, so a restarted worker kills what a dead one left behind. */
  liveGroups?: LiveGroups;
}

/** The embedded runner: each attempt is a local process group in a fresh directory. */
export class LocalRunner implements RolloutRunner {
  private readonly slots: Semaphore;
  private readonly o: Required<Omit<LocalRunnerOptions, 'root' | 'logs' | 'liveGroups'>> & Pick<LocalRunnerOptions, 'root' | 'logs' | 'liveGroups'>;

  constructor(options: LocalRunnerOptions) {
    this.o = {
      concurrency: 4, killGraceMs: 5000, drainMs: 2000, headBytes: 64 * 1024, tailBytes: 64 * 1024,
      maxOutputBytes: 64 * 1024, parentEnv: process.env, ...options,
    };
    this.slots = new Semaphore(this.o.concurrency);
  }

  async run(input: RolloutSpecInput, signal: AbortSignal, options: RunOptions = {}): Promise<RunnerResult> {
    const spec = parseFrozen(rolloutSpecSchema, input, 'rollout spec');
    let release: () => void;
    try {
      release = await this.slots.acquire(signal);
    } catch (e) {
      throw new RolloutCancelledError(spec.ref, signal.reason ?? e);
    }
    try {
      return await this.attempt(spec, signal, options);
    } finally {
      release();
    }
  }

  async reapAbandoned(closeToken: (token: string) => Promise<unknown>): Promise<number> {
    return (await this.o.liveGroups?.reap(closeToken))?.length ?? 0;
  }

  async release(runId: string, iteration: number, rolloutIds: readonly string[]): Promise<void> {
    for (const rolloutId of rolloutIds) await rm(this.rolloutDir(runId, iteration, rolloutId), { recursive: true, force: true });
  }

  /** Every attempt of a rollout lives under one directory; the ids pass assertId, so none can leave the root. */
  private rolloutDir(runId: string, iteration: number, rolloutId: string): string {
    return path.join(this.o.root, assertId('run', runId), String(iteration).padStart(6, '0'), assertId('rollout', rolloutId));
  }

  private async attempt(spec: RolloutSpec, signal: AbortSignal, options: RunOptions): Promise<RunnerResult> {
    const { ref } = spec;
    const base = path.join(this.rolloutDir(ref.runId, ref.iteration, ref.rolloutId), `attempt-${ref.attempt}`);
    const workdir = path.join(base, 'work');
    const files = { taskFile: path.join(base, 'task.json'), outputFile: path.join(base, 'output.txt') };
    const result = (outcome: RolloutOutcome, p: Partial<AgentProcessResult>, detail: string | null, outputText: string | null) => ({
      ref, taskId: spec.taskId, groupId: spec.groupId, mode: spec.mode, outcome,
      exitCode: p.exitCode ?? null, signal: p.signal ?? null, durationMs: p.durationMs ?? 0, outputText,
      stdoutKey: keys.rolloutLog(ref, 'stdout'), stderrKey: keys.rolloutLog(ref, 'stderr'), detail,
      workdir: spec.keepWorkdir ? workdir : null,
    });

    try {
      // A re-run of the same attempt (worker crash) starts clean too.
      await rm(base, { recursive: true, force: true });
      await mkdir(workdir, { recursive: true });
      await writeFile(files.taskFile, agentTaskJson(spec));
      await options.prepareWorkdir?.(workdir, spec);
    } catch (e) {
      await this.cleanup(spec, base);
      return result('infra_failed', {}, `preparing workdir failed: ${(e as Error).message}`, null);
    }
    if (signal.aborted) {
      await this.cleanup(spec, base);
      throw new RolloutCancelledError(ref, signal.reason);
    }
    const live = await this.o.liveGroups?.open(spec.gateway.token, `${ref.runId}/${ref.iteration}/${ref.rolloutId}/attempt-${ref.attempt}`);
    const proc = await runAgentProcess({
      command: spec.agent.command, cwd: spec.agent.cwd ?? workdir, env: localAgentEnv(spec, this.o.parentEnv, files),
      timeoutMs: spec.timeoutMs, killGraceMs: this.o.killGraceMs, drainMs: this.o.drainMs, signal,
      headBytes: this.o.headBytes, tailBytes: this.o.tailBytes, onSpawn: (pgid) => live?.spawned(pgid),
    });
    // Whoever still holds the agent's pipes left its session (setsid); find it by this attempt's token.
    const escaped = proc.pipesHeld ? await killByEnv(`OPENAI_API_KEY=${spec.gateway.token}`) : [];
    await live?.close();
    const outputText = await readBounded(files.outputFile, this.o.maxOutputBytes);
    let uploadError: Error | null = null;
    try {
      await uploadLogs(this.o.logs, ref, proc.stdout, proc.stderr);
    } catch (e) {
      uploadError = e as Error;
    }
    await this.cleanup(spec, base);
    if (proc.aborted) throw new RolloutCancelledError(ref, signal.reason);
    if (proc.spawnError) return result('infra_failed', proc, `spawn ${spec.agent.command[0]} failed: ${proc.spawnError.message}`, null);
    if (uploadError) return result('infra_failed', proc, `log upload failed: ${uploadError.message}`, outputText);
    if (proc.timedOut) return result('timed_out', proc, `timed out after ${spec.timeoutMs} ms`, outputText);
    if (proc.exitCode === 0) return result('succeeded', proc, escaped.length ? `killed escaped processes ${escaped.join(', ')}` : null, outputText);
    return result('agent_failed', proc, proc.signal ? `agent killed by ${proc.signal}` : `agent exited with ${proc.exitCode}`, outputText);
  }

  private async cleanup(spec: RolloutSpec, base: string): Promise<void> {
    if (!spec.keepWorkdir) await rm(base, { recursive: true, force: true });
  }
}

/** The first `max` bytes of a regular file as UTF-8, or null if the agent wrote none (or a FIFO, or a symlink). */
async function readBounded(file: string, max: number): Promise<string | null> {
  let handle;
  try {
    // Non-blocking and no symlink: an agent cannot park the worker on a FIFO or point it at another file.
    handle = await open(file, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
  } catch {
    return null;
  }
  try {
    if (!(await handle.stat()).isFile()) return null;
    const buf = Buffer.alloc(max);
    const { bytesRead } = await handle.read(buf, 0, max, 0);
    return buf.subarray(0, bytesRead).toString('utf8');
  } finally {
    await handle.close();
  }
}
