import { realpath } from 'node:fs/promises';
import { homedir } from 'node:os';
import path from 'node:path';
import { runInWorkdir, runProcess, type RunInWorkdir } from '../rewards/run-process.js';
import { GatewayForwarders } from './gateway-forwarder.js';
import { PidsCgroup } from './pids-cgroup.js';
import { SANDBOX_FAILED_EXIT, SANDBOX_FAILED_MARK, sandboxCommand, sandboxGatewayPort } from './sandbox-command.js';
import { SandboxUnavailableError } from './sandbox-probe.js';
import { SandboxUser, type SandboxIdentity } from './sandbox-user.js';
import type { RolloutSpec } from './spec.js';

export interface SandboxLauncherOptions {
  /** The runner's root (every attempt dir): hidden from each sandbox. */
  root: string;
  /** More directories to hide (the data dir); the operator's home is always hidden. */
  hide: readonly string[];
  /** Directories inside hidden ones that agents may still read (their code). */
  readOnly: readonly string[];
  parentEnv: NodeJS.ProcessEnv;
  /** Parent of the per-attempt pids cgroups: 'auto' (found), a directory, or null (none). */
  pidsCgroup: string | null | 'auto';
}

/**
 * Pids of an attempt's cgroup beyond the agent's: bwrap twice and socat, plus one socat child per open gateway
 * connection (about 60 at once), which an agent at its process limit cannot take (pids-cgroup.ts).
 */
const SANDBOX_OWN_PIDS = 64;

/** One attempt's sandbox: who it runs as, what it may read, and its pids cgroup (removed with `close`). */
export interface AttemptSandbox extends SandboxIdentity {
  readOnly: string[];
  cgroup: PidsCgroup | null;
}

/** Builds the bubblewrap command lines of attempts and their scoring checks (docs/sandbox.md). */
export class SandboxLauncher {
  private readonly forwarders = new GatewayForwarders();
  private readonly user: SandboxUser;

  constructor(private readonly o: SandboxLauncherOptions) {
    this.user = new SandboxUser(o.root, o.pidsCgroup);
  }

  /**
   * Decided before the attempt dir exists: throws SandboxUnavailableError when the limits cannot be held, or when a
   * read-only path the run asked for lies in what agents never see (the runner's root, the data dir).
   */
  async identity(spec: RolloutSpec): Promise<Omit<AttemptSandbox, 'cgroup'>> {
    const readOnly = await this.readOnlyFor(
      spec.agent.command[0] as string,
      spec.agent.cwd ?? this.o.root,
      spec.agent.readOnly ?? [],
    );
    return { readOnly, ...(await this.user.identity(readOnly)) };
  }

  /** The attempt's pids cgroup (when the identity has a root for one) and the attempt dir handed to its uid. */
  async prepare(
    identity: Omit<AttemptSandbox, 'cgroup'>,
    spec: RolloutSpec,
    attemptDir: string,
  ): Promise<AttemptSandbox> {
    await this.user.handOver(attemptDir, identity);
    // The agent gets its limit in a slot of its own; the sandbox's processes (bwrap, socat) get their pids on top.
    const cgroup =
      identity.cgroupRoot === null
        ? null
        : await PidsCgroup.create(identity.cgroupRoot, {
            total: spec.limits.processes + SANDBOX_OWN_PIDS,
            agent: spec.limits.processes,
          });
    return { ...identity, cgroup };
  }

  handOver(attemptDir: string, sandbox: AttemptSandbox): Promise<void> {
    return this.user.handOver(attemptDir, sandbox);
  }

  /** Stops the gateway forwarders (the worker's shutdown). */
  close(): Promise<void> {
    return this.forwarders.close();
  }

  /** The agent's argv in its sandbox, with the env's gateway URLs pointed at the forwarder inside. */
  async agentCommand(
    spec: RolloutSpec,
    sandbox: AttemptSandbox,
    attemptDir: string,
    workdir: string,
    env: Record<string, string>,
  ): Promise<string[]> {
    const url = new URL(spec.gateway.baseUrl);
    const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
    const gatewaySocket = await this.forwarders.socketFor(url.hostname.replace(/^\[|\]$/g, ''), port);
    // Inside, the gateway is at 127.0.0.1 on its own port: the same URLs whenever the gateway is on loopback.
    const innerPort = sandboxGatewayPort(port);
    const inner = `${url.protocol}//127.0.0.1:${innerPort}`;
    for (const [name, value] of Object.entries(env))
      if (value.startsWith(`${url.origin}/`)) env[name] = inner + value.slice(url.origin.length);
    const command = sandboxCommand({
      command: spec.agent.command,
      cwd: spec.agent.cwd ?? workdir,
      attemptDir,
      hide: this.hidden(),
      readOnly: sandbox.readOnly,
      gatewaySocket,
      gatewayPort: innerPort,
      limits: spec.limits,
      dropToNobody: sandbox.dropToNobody,
      agentCgroupProcs: sandbox.cgroup?.agentProcs ?? null,
    });
    return sandbox.cgroup ? sandbox.cgroup.enter(command) : command;
  }

  /**
   * How the scoring step runs a check: for 'bubblewrap', in a sandbox of the attempt's profile, limits and pids
   * cgroup, but with no network at all; for 'none', as a plain child in the workdir.
   */
  scoringExec(spec: RolloutSpec, sandbox: AttemptSandbox | null, attemptDir: string, workdir: string): RunInWorkdir {
    if (spec.sandbox === 'none' || sandbox === null) return runInWorkdir(workdir);
    return async (argv, opts) => {
      const program = await resolveProgram(argv[0] as string, opts.env?.PATH ?? this.o.parentEnv.PATH ?? '', workdir);
      if (!program) throw new Error(`spawn ${argv[0]} ENOENT (not found, or not on PATH)`);
      const readOnly = [...sandbox.readOnly, path.dirname(path.dirname(program))];
      // The check's interpreter may sit where nobody cannot reach: then it runs as the worker's uid, under the cgroup.
      const identity = await this.user.identity(readOnly);
      const command = sandboxCommand({
        command: argv,
        cwd: workdir,
        attemptDir,
        hide: this.hidden(),
        readOnly,
        gatewaySocket: null,
        gatewayPort: 0,
        limits: spec.limits,
        dropToNobody: identity.dropToNobody,
      });
      const outcome = await runProcess(sandbox.cgroup ? sandbox.cgroup.enter(command) : command, {
        ...opts,
        cwd: workdir,
      });
      const failure = sandboxError(outcome.exitCode, Buffer.from(outcome.stderr));
      if (failure) throw new Error(failure);
      return outcome;
    };
  }

  private hidden(): string[] {
    return [this.o.root, homedir(), ...this.o.hide];
  }

  /**
   * What a sandboxed program must read besides the open root: the worker's cwd (the agent's code) and the install
   * prefix of its interpreter (a venv's python may live under the operator's home, e.g. pyenv), bound read-only.
   */
  private async readOnlyFor(program: string, cwd: string, asked: readonly string[]): Promise<string[]> {
    for (const dir of asked) {
      const full = path.resolve(dir);
      const secret = [this.o.root, ...this.o.hide]
        .map((h) => path.resolve(h))
        .find((h) => full === h || full.startsWith(`${h}/`));
      if (secret)
        throw new SandboxUnavailableError(
          `agent.readOnlyPaths / agent.cwd: ${dir} is inside ${secret}, which agents never see`,
          'name a directory outside the worker data dir',
        );
    }
    const found = await resolveProgram(program, this.o.parentEnv.PATH ?? '', cwd);
    const readOnly = [...new Set([...this.o.readOnly, ...asked.map((d) => path.resolve(d))])];
    return found ? [...readOnly, path.dirname(path.dirname(found))] : readOnly;
  }
}

/** The sandbox's own failure (the agent never started then): the wrapper's marked line, or bwrap's first words. */
export function sandboxError(exitCode: number | null, stderr: Buffer): string | null {
  const text = stderr.toString('utf8');
  const at = text.indexOf(SANDBOX_FAILED_MARK);
  if (exitCode === SANDBOX_FAILED_EXIT && at >= 0)
    return `sandbox failed: ${text
      .slice(at + SANDBOX_FAILED_MARK.length)
      .split('\n')[0]
      ?.trim()}`;
  return text.startsWith('bwrap: ') ? `sandbox failed: ${text.split('\n')[0]}` : null;
}

/** The real path of a program (looked up on PATH when bare), or null when it cannot be found. */
export async function resolveProgram(program: string, searchPath: string, cwd: string): Promise<string | null> {
  const candidates = program.includes('/')
    ? [path.resolve(cwd, program)]
    : searchPath
        .split(':')
        .filter(Boolean)
        .map((d) => path.join(d, program));
  for (const candidate of candidates) {
    try {
      return await realpath(candidate);
    } catch {
      /* not here */
    }
  }
  return null;
}
