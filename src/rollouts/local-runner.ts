import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseFrozen } from '../config/errors.js';
import type { RolloutOutcome, RunnerResult } from '../contracts/rollout.js';
import { assertId, keys } from '../storage/keys.js';
import { localAgentEnv } from './agent-env.js';
import { runAgentProcess, type AgentProcessResult } from './agent-process.js';
import { readBounded } from './bounded-read.js';
import { placeHiddenFiles } from './hidden-files.js';
import { uploadLogs } from './log-sink.js';
import type { LiveGroups } from './live-groups.js';
import { killByEnv } from './process-group.js';
import { SandboxLauncher, resolveProgram, sandboxError, type AttemptSandbox } from './sandbox-launch.js';
import { checkSandbox } from './sandbox-probe.js';
import { Semaphore } from './semaphore.js';
import {
  RolloutCancelledError,
  agentTaskJson,
  rolloutSpecSchema,
  type LogSink,
  type RolloutRunner,
  type RolloutSpec,
  type RolloutSpecInput,
  type RunOptions,
} from './spec.js';

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
  /** Directories a sandboxed agent must not see besides the root and the operator's home (e.g. the data dir). */
  hide?: string[];
  /** Directories inside hidden ones a sandboxed agent may still read (its code); default: the worker's cwd. */
  readOnly?: string[];
  /**
   * Parent directory of the per-attempt pids cgroups that hold `limits.processes` for every uid: 'auto' (default)
   * finds a writable one, null uses none (a root worker whose agents cannot run as nobody then refuses to run them).
   */
  pidsCgroup?: string | null | 'auto';
}

type Options = Required<Omit<LocalRunnerOptions, 'root' | 'logs' | 'liveGroups'>> &
  Pick<LocalRunnerOptions, 'root' | 'logs' | 'liveGroups'>;

/**
 * The embedded runner: each attempt is a local process group in a fresh directory, inside a bubblewrap sandbox
 * unless its spec says `sandbox: 'none'` (docs/sandbox.md).
 */
export class LocalRunner implements RolloutRunner {
  private readonly slots: Semaphore;
  private readonly o: Options;
  private readonly sandbox: SandboxLauncher;
  private readonly asRoot = process.getuid?.() === 0;

  constructor(options: LocalRunnerOptions) {
    this.o = {
      concurrency: 4,
      killGraceMs: 5000,
      drainMs: 2000,
      headBytes: 64 * 1024,
      tailBytes: 64 * 1024,
      maxOutputBytes: 64 * 1024,
      parentEnv: process.env,
      hide: [],
      readOnly: [process.cwd()],
      pidsCgroup: 'auto',
      ...options,
    };
    this.slots = new Semaphore(this.o.concurrency);
    this.sandbox = new SandboxLauncher({
      root: this.o.root,
      hide: this.o.hide,
      readOnly: this.o.readOnly,
      parentEnv: this.o.parentEnv,
      pidsCgroup: this.o.pidsCgroup,
    });
  }

  /** Stops the gateway forwarders (the worker's shutdown); attempts still running lose their gateway. */
  close(): Promise<void> {
    return this.sandbox.close();
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
      // Unavailable is thrown, not returned: retrying an attempt cannot fix the machine (docs/sandbox.md).
      if (spec.sandbox === 'bubblewrap') await checkSandbox(this.asRoot);
      const identity = spec.sandbox === 'bubblewrap' ? await this.sandbox.identity(spec) : null;
      return await this.attempt(spec, identity, signal, options);
    } finally {
      release();
    }
  }

  async reapAbandoned(closeToken: (token: string) => Promise<unknown>): Promise<number> {
    return (await this.o.liveGroups?.reap(closeToken))?.length ?? 0;
  }

  async release(runId: string, iteration: number, rolloutIds: readonly string[]): Promise<void> {
    for (const rolloutId of rolloutIds)
      await rm(this.rolloutDir(runId, iteration, rolloutId), { recursive: true, force: true });
  }

  /** Every attempt of a rollout lives under one directory; the ids pass assertId, so none can leave the root. */
  private rolloutDir(runId: string, iteration: number, rolloutId: string): string {
    return path.join(
      this.o.root,
      assertId('run', runId),
      String(iteration).padStart(6, '0'),
      assertId('rollout', rolloutId),
    );
  }

  private async attempt(
    spec: RolloutSpec,
    identity: Omit<AttemptSandbox, 'cgroup'> | null,
    signal: AbortSignal,
    options: RunOptions,
  ): Promise<RunnerResult> {
    const { ref } = spec;
    const base = path.join(this.rolloutDir(ref.runId, ref.iteration, ref.rolloutId), `attempt-${ref.attempt}`);
    const workdir = path.join(base, 'work');
    const files = { taskFile: path.join(base, 'task.json'), outputFile: path.join(base, 'output.txt') };
    // Sandboxed agents get a fresh writable HOME of their own (CLIs keep config and sessions in ~/.claude, ~/.codex).
    const home = path.join(base, 'home');
    const result = (
      outcome: RolloutOutcome,
      p: Partial<AgentProcessResult>,
      detail: string | null,
      outputText: string | null,
    ) => ({
      ref,
      taskId: spec.taskId,
      groupId: spec.groupId,
      mode: spec.mode,
      outcome,
      exitCode: p.exitCode ?? null,
      signal: p.signal ?? null,
      durationMs: p.durationMs ?? 0,
      outputText,
      stdoutKey: keys.rolloutLog(ref, 'stdout'),
      stderrKey: keys.rolloutLog(ref, 'stderr'),
      detail,
      // File-reading rewards are scored in afterAgent, before the workdir is removed: nothing needs it afterwards.
      workdir: null,
      sandbox: spec.sandbox,
    });
    let sandbox: AttemptSandbox | null = null;
    const cleanup = async () => {
      await rm(base, { recursive: true, force: true });
      await sandbox?.cgroup?.remove();
    };

    try {
      // A re-run of the same attempt (worker crash) starts clean too.
      await rm(base, { recursive: true, force: true });
      await mkdir(workdir, { recursive: true });
      if (identity) await mkdir(home);
      await writeFile(files.taskFile, agentTaskJson(spec));
      await options.prepareWorkdir?.(workdir, spec);
      // The agent runs as nobody when it can: it owns its attempt dir and nothing else.
      if (identity) sandbox = await this.sandbox.prepare(identity, spec, base);
    } catch (e) {
      await cleanup();
      return result('infra_failed', {}, `preparing workdir failed: ${(e as Error).message}`, null);
    }
    if (signal.aborted) {
      await cleanup();
      throw new RolloutCancelledError(ref, signal.reason);
    }
    // Inside the sandbox a missing program is an exit status, not a spawn error: find it first, as spawn would.
    if (
      sandbox &&
      !(await resolveProgram(spec.agent.command[0] as string, this.o.parentEnv.PATH ?? '', spec.agent.cwd ?? workdir))
    ) {
      await cleanup();
      return result(
        'infra_failed',
        {},
        `spawn ${spec.agent.command[0]} failed: ENOENT (not found, or not on PATH)`,
        null,
      );
    }
    const env = localAgentEnv(spec, this.o.parentEnv, files);
    if (sandbox) env.HOME = home;
    let command: readonly string[] = spec.agent.command;
    try {
      if (sandbox) command = await this.sandbox.agentCommand(spec, sandbox, base, workdir, env);
    } catch (e) {
      await cleanup();
      return result('infra_failed', {}, `sandbox setup failed: ${(e as Error).message}`, null);
    }
    const live = await this.o.liveGroups?.open(
      spec.gateway.token,
      `${ref.runId}/${ref.iteration}/${ref.rolloutId}/attempt-${ref.attempt}`,
    );
    const proc = await runAgentProcess({
      command,
      cwd: spec.agent.cwd ?? workdir,
      env,
      timeoutMs: spec.timeoutMs,
      killGraceMs: this.o.killGraceMs,
      drainMs: this.o.drainMs,
      signal,
      headBytes: this.o.headBytes,
      tailBytes: this.o.tailBytes,
      onSpawn: (pgid) => live?.spawned(pgid),
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
    if (proc.aborted) {
      await cleanup();
      throw new RolloutCancelledError(ref, signal.reason);
    }
    const final = ((): RunnerResult => {
      if (proc.spawnError)
        return result('infra_failed', proc, `spawn ${spec.agent.command[0]} failed: ${proc.spawnError.message}`, null);
      if (uploadError) return result('infra_failed', proc, `log upload failed: ${uploadError.message}`, outputText);
      if (proc.timedOut) return result('timed_out', proc, `timed out after ${spec.timeoutMs} ms`, outputText);
      const sandboxFailure = sandbox && proc.exitCode !== 0 ? sandboxError(proc.exitCode, proc.stderr) : null;
      if (sandboxFailure) return result('infra_failed', proc, sandboxFailure, outputText);
      if (proc.exitCode === 0)
        return result(
          'succeeded',
          proc,
          escaped.length ? `killed escaped processes ${escaped.join(', ')}` : null,
          outputText,
        );
      return result(
        'agent_failed',
        proc,
        proc.signal ? `agent killed by ${proc.signal}` : `agent exited with ${proc.exitCode}`,
        outputText,
      );
    })();
    try {
      // The agent and everything it started are gone (its pid namespace, or its reaped group): its files are final.
      if (final.outcome !== 'infra_failed' && options.afterAgent) {
        await placeHiddenFiles(workdir, spec.hiddenFiles);
        if (sandbox) await this.sandbox.handOver(base, sandbox);
        await options.afterAgent(workdir, final, this.sandbox.scoringExec(spec, sandbox, base, workdir));
      }
    } finally {
      await cleanup();
    }
    return final;
  }
}
