import { constants } from 'node:fs';
import { chmod, lchown, mkdir, open, readdir, realpath, rm, stat, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import path from 'node:path';
import { parseFrozen } from '../config/errors.js';
import type { RolloutOutcome, RunnerResult } from '../contracts/rollout.js';
import { assertId, keys } from '../storage/keys.js';
import { localAgentEnv } from './agent-env.js';
import { runAgentProcess, type AgentProcessResult } from './agent-process.js';
import { runInWorkdir, runProcess, type RunInWorkdir } from '../rewards/run-process.js';
import { placeHiddenFiles } from './hidden-files.js';
import { uploadLogs } from './log-sink.js';
import type { LiveGroups } from './live-groups.js';
import { GatewayForwarders } from './gateway-forwarder.js';
import { killByEnv } from './process-group.js';
import { SANDBOX_FAILED_EXIT, SANDBOX_FAILED_MARK, SANDBOX_UID, sandboxCommand, sandboxGatewayPort } from './sandbox-command.js';
import { checkSandbox } from './sandbox-probe.js';
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
  /** Directories a sandboxed agent must not see besides the root and the operator's home (e.g. the data dir). */
  hide?: string[];
  /** Directories inside hidden ones a sandboxed agent may still read (its code); default: the worker's cwd. */
  readOnly?: string[];
}

/**
 * The embedded runner: each attempt is a local process group in a fresh directory, inside a bubblewrap sandbox
 * unless its spec says `sandbox: 'none'` (docs/sandbox.md).
 */
export class LocalRunner implements RolloutRunner {
  private readonly slots: Semaphore;
  private readonly o: Required<Omit<LocalRunnerOptions, 'root' | 'logs' | 'liveGroups'>> & Pick<LocalRunnerOptions, 'root' | 'logs' | 'liveGroups'>;
  private readonly forwarders = new GatewayForwarders();
  private readonly asRoot = process.getuid?.() === 0;
  private readonly traversable = new Map<string, Promise<boolean>>();

  constructor(options: LocalRunnerOptions) {
    this.o = {
      concurrency: 4, killGraceMs: 5000, drainMs: 2000, headBytes: 64 * 1024, tailBytes: 64 * 1024,
      maxOutputBytes: 64 * 1024, parentEnv: process.env, hide: [], readOnly: [process.cwd()], ...options,
    };
    this.slots = new Semaphore(this.o.concurrency);
  }

  /** Stops the gateway forwarders (the worker's shutdown); attempts still running lose their gateway. */
  close(): Promise<void> {
    return this.forwarders.close();
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
      workdir: spec.keepWorkdir ? workdir : null, sandbox: spec.sandbox,
    });

    try {
      // A re-run of the same attempt (worker crash) starts clean too.
      await rm(base, { recursive: true, force: true });
      await mkdir(workdir, { recursive: true });
      await writeFile(files.taskFile, agentTaskJson(spec));
      await options.prepareWorkdir?.(workdir, spec);
      // The agent runs as nobody when the worker is root: it owns its attempt dir and nothing else.
      if (spec.sandbox === 'bubblewrap' && (await this.dropToNobody(await this.readOnlyFor(spec)))) await chownTree(base, SANDBOX_UID);
    } catch (e) {
      await this.cleanup(spec, base);
      return result('infra_failed', {}, `preparing workdir failed: ${(e as Error).message}`, null);
    }
    if (signal.aborted) {
      await this.cleanup(spec, base);
      throw new RolloutCancelledError(ref, signal.reason);
    }
    // Inside the sandbox a missing program is an exit status, not a spawn error: find it first, as spawn would.
    if (spec.sandbox === 'bubblewrap' && !(await resolveProgram(spec.agent.command[0] as string, this.o.parentEnv.PATH ?? '', spec.agent.cwd ?? workdir))) {
      await this.cleanup(spec, base);
      return result('infra_failed', {}, `spawn ${spec.agent.command[0]} failed: ENOENT (not found, or not on PATH)`, null);
    }
    let launch: { command: readonly string[]; env: Record<string, string> };
    try {
      launch = await this.launchCommand(spec, base, workdir, files);
    } catch (e) {
      await this.cleanup(spec, base);
      return result('infra_failed', {}, `sandbox setup failed: ${(e as Error).message}`, null);
    }
    const live = await this.o.liveGroups?.open(spec.gateway.token, `${ref.runId}/${ref.iteration}/${ref.rolloutId}/attempt-${ref.attempt}`);
    const proc = await runAgentProcess({
      command: launch.command, cwd: spec.agent.cwd ?? workdir, env: launch.env,
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
    if (proc.aborted) {
      await this.cleanup(spec, base);
      throw new RolloutCancelledError(ref, signal.reason);
    }
    const final = ((): RunnerResult => {
      if (proc.spawnError) return result('infra_failed', proc, `spawn ${spec.agent.command[0]} failed: ${proc.spawnError.message}`, null);
      if (uploadError) return result('infra_failed', proc, `log upload failed: ${uploadError.message}`, outputText);
      if (proc.timedOut) return result('timed_out', proc, `timed out after ${spec.timeoutMs} ms`, outputText);
      const sandboxFailure = spec.sandbox === 'bubblewrap' && proc.exitCode !== 0 ? sandboxError(proc.exitCode, proc.stderr) : null;
      if (sandboxFailure) return result('infra_failed', proc, sandboxFailure, outputText);
      if (proc.exitCode === 0) return result('succeeded', proc, escaped.length ? `killed escaped processes ${escaped.join(', ')}` : null, outputText);
      return result('agent_failed', proc, proc.signal ? `agent killed by ${proc.signal}` : `agent exited with ${proc.exitCode}`, outputText);
    })();
    try {
      // The agent and everything it started are gone (its pid namespace, or its reaped group): its files are final.
      if (final.outcome !== 'infra_failed' && options.afterAgent) {
        await placeHiddenFiles(workdir, spec.hiddenFiles);
        if (spec.sandbox === 'bubblewrap' && (await this.dropToNobody(await this.readOnlyFor(spec)))) await chownTree(base, SANDBOX_UID);
        await options.afterAgent(workdir, final, this.scoringExec(spec, base, workdir));
      }
    } finally {
      await this.cleanup(spec, base);
    }
    return final;
  }

  /** The argv and environment of the agent: as configured for 'none', wrapped in bubblewrap otherwise. */
  private async launchCommand(
    spec: RolloutSpec, base: string, workdir: string, files: { taskFile: string; outputFile: string },
  ): Promise<{ command: readonly string[]; env: Record<string, string> }> {
    const env = localAgentEnv(spec, this.o.parentEnv, files);
    if (spec.sandbox === 'none') return { command: spec.agent.command, env };
    const url = new URL(spec.gateway.baseUrl);
    const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
    const gatewaySocket = await this.forwarders.socketFor(url.hostname.replace(/^\[|\]$/g, ''), port);
    // Inside, the gateway is at 127.0.0.1 on its own port: the same URLs whenever the gateway is on loopback.
    const innerPort = sandboxGatewayPort(port);
    const inner = `${url.protocol}//127.0.0.1:${innerPort}`;
    for (const [name, value] of Object.entries(env)) if (value.startsWith(`${url.origin}/`)) env[name] = inner + value.slice(url.origin.length);
    const readOnly = await this.readOnlyFor(spec);
    const command = sandboxCommand({
      command: spec.agent.command, cwd: spec.agent.cwd ?? workdir, attemptDir: base,
      hide: [this.o.root, homedir(), ...this.o.hide], readOnly,
      gatewaySocket, gatewayPort: innerPort, limits: spec.limits, dropToNobody: await this.dropToNobody(readOnly),
    });
    return { command, env };
  }

  /**
   * How the scoring step runs a check: for 'bubblewrap', in a sandbox of the attempt's profile and limits (the same
   * mounts, uid and rlimits) but with no network at all; for 'none', as a plain child in the workdir.
   */
  private scoringExec(spec: RolloutSpec, base: string, workdir: string): RunInWorkdir {
    if (spec.sandbox === 'none') return runInWorkdir(workdir);
    return async (argv, opts) => {
      const program = await resolveProgram(argv[0] as string, opts.env?.PATH ?? this.o.parentEnv.PATH ?? '', workdir);
      if (!program) throw new Error(`spawn ${argv[0]} ENOENT (not found, or not on PATH)`);
      const readOnly = [...(await this.readOnlyFor(spec)), path.dirname(path.dirname(program))];
      const command = sandboxCommand({
        command: argv, cwd: workdir, attemptDir: base, hide: [this.o.root, homedir(), ...this.o.hide], readOnly,
        gatewaySocket: null, gatewayPort: 0, limits: spec.limits, dropToNobody: await this.dropToNobody(readOnly),
      });
      const outcome = await runProcess(command, { ...opts, cwd: workdir });
      const failure = sandboxError(outcome.exitCode, Buffer.from(outcome.stderr));
      if (failure) throw new Error(failure);
      return outcome;
    };
  }

  /**
   * What the agent must read besides the open root: the worker's cwd (its code) and the install prefix of its
   * interpreter (a venv's python may live under the operator's home, e.g. pyenv), bound read-only if hidden.
   */
  private async readOnlyFor(spec: RolloutSpec): Promise<string[]> {
    const program = await resolveProgram(spec.agent.command[0] as string, this.o.parentEnv.PATH ?? '', spec.agent.cwd ?? this.o.root);
    return program ? [...this.o.readOnly, path.dirname(path.dirname(program))] : [...this.o.readOnly];
  }

  /**
   * A root worker runs agents as nobody when nobody can reach the runner's root and everything bound read-only
   * (bwrap resolves bind sources as the caller); otherwise as the worker's uid, mapped to 65534 inside.
   */
  private async dropToNobody(readOnly: readonly string[]): Promise<boolean> {
    if (!this.asRoot) return false;
    const check = (dir: string) => {
      let known = this.traversable.get(dir);
      if (!known) {
        known = dir === this.o.root
          ? mkdir(dir, { recursive: true }).then(() => chmod(dir, 0o711)).then(() => traversableByOthers(dir))
          : traversableByOthers(dir).catch(() => false);
        this.traversable.set(dir, known);
      }
      return known;
    };
    const all = await Promise.all([this.o.root, ...readOnly].map(check));
    return all.every(Boolean);
  }

  private async cleanup(spec: RolloutSpec, base: string): Promise<void> {
    if (!spec.keepWorkdir) await rm(base, { recursive: true, force: true });
  }
}

/** The sandbox's own failure (the agent never started then): the wrapper's marked line, or bwrap's first words. */
function sandboxError(exitCode: number | null, stderr: Buffer): string | null {
  const text = stderr.toString('utf8');
  const at = text.indexOf(SANDBOX_FAILED_MARK);
  if (exitCode === SANDBOX_FAILED_EXIT && at >= 0) return `sandbox failed: ${text.slice(at + SANDBOX_FAILED_MARK.length).split('\n')[0]?.trim()}`;
  return text.startsWith('bwrap: ') ? `sandbox failed: ${text.split('\n')[0]}` : null;
}

/** The real path of the agent's program (looked up on PATH when bare), or null when it cannot be found. */
async function resolveProgram(program: string, searchPath: string, cwd: string): Promise<string | null> {
  const candidates = program.includes('/') ? [path.resolve(cwd, program)] : searchPath.split(':').filter(Boolean).map((d) => path.join(d, program));
  for (const candidate of candidates) {
    try {
      return await realpath(candidate);
    } catch { /* not here */ }
  }
  return null;
}

async function traversableByOthers(dir: string): Promise<boolean> {
  for (let d = path.resolve(dir); ; d = path.dirname(d)) {
    if (((await stat(d)).mode & 0o001) === 0) return false;
    if (d === path.dirname(d)) return true;
  }
}

async function chownTree(dir: string, uid: number): Promise<void> {
  await lchown(dir, uid, uid);
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) await chownTree(p, uid);
    else await lchown(p, uid, uid);
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
