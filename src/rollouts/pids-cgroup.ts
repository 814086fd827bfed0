import { access, mkdir, readdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { SANDBOX_FAILED_EXIT, SANDBOX_FAILED_MARK } from './sandbox-command.js';

/** Where this worker creates its attempts' pids cgroups, or why it cannot. */
export type PidsCgroupRoot = { dir: string; reason?: undefined } | { dir: null; reason: string };

const PARENT = 'volt-rollouts';

/** Mount points of the cgroup hierarchies that have the pids controller, with this process's cgroup in each. */
async function pidsHierarchies(): Promise<{ dir: string; v2: boolean }[]> {
  const [mounts, own] = await Promise.all([
    readFile('/proc/self/mounts', 'utf8'),
    readFile('/proc/self/cgroup', 'utf8'),
  ]);
  const found: { dir: string; v2: boolean }[] = [];
  for (const line of mounts.split('\n')) {
    const [, mountPoint, type, options] = line.split(' ');
    if (!mountPoint || !options) continue;
    if (type === 'cgroup2') {
      const self = /^0::(.*)$/m.exec(own)?.[1];
      const dir = self === undefined ? null : path.join(mountPoint, self);
      if (
        dir &&
        (await readFile(path.join(dir, 'cgroup.controllers'), 'utf8').catch(() => '')).split(/\s+/).includes('pids')
      )
        found.push({ dir, v2: true });
    } else if (type === 'cgroup' && options.split(',').includes('pids')) {
      const self = /^\d+:(?:[^:]*,)?pids(?:,[^:]*)?:(.*)$/m.exec(own)?.[1];
      if (self !== undefined) found.push({ dir: path.join(mountPoint, self), v2: false });
    }
  }
  return found;
}

/**
 * A pids cgroup directory under this process's own cgroup (`<it>/volt-rollouts`) in which attempt cgroups get a
 * pids.max, in the cgroup v2 or v1 hierarchy that has the pids controller; null with the reason when there is none
 * or it is not writable (a container's read-only /sys/fs/cgroup, a v2 cgroup whose controllers are not delegated).
 */
export async function findPidsCgroupRoot(): Promise<PidsCgroupRoot> {
  let hierarchies: { dir: string; v2: boolean }[];
  try {
    hierarchies = await pidsHierarchies();
  } catch (e) {
    return { dir: null, reason: `cannot read /proc/self/mounts or /proc/self/cgroup (${(e as Error).message})` };
  }
  if (hierarchies.length === 0) return { dir: null, reason: 'no cgroup hierarchy with the pids controller is mounted' };
  const why: string[] = [];
  for (const { dir, v2 } of hierarchies) {
    const parent = path.join(dir, PARENT);
    try {
      await mkdir(parent, { recursive: true });
      // v2: a child gets pids.max only when its parent delegates the controller (not possible in a cgroup with processes).
      if (v2 && !(await exists(path.join(parent, 'pids.max'))))
        await writeFile(path.join(dir, 'cgroup.subtree_control'), '+pids');
      if (v2) await writeFile(path.join(parent, 'cgroup.subtree_control'), '+pids');
      if (!(await exists(path.join(parent, 'pids.max')))) throw new Error('it has no pids.max');
      await removeAbandoned(parent);
      return { dir: parent };
    } catch (e) {
      why.push(`${parent}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    }
  }
  return { dir: null, reason: `no writable pids cgroup (${why.join('; ')})` };
}

const exists = (file: string) =>
  access(file).then(
    () => true,
    () => false,
  );

/** Attempt cgroups a killed worker left behind (named after its pid, now gone); busy or foreign ones stay. */
async function removeAbandoned(parent: string): Promise<void> {
  for (const name of await readdir(parent)) {
    const pid = Number(/^attempt-(\d+)-\d+$/.exec(name)?.[1] ?? NaN);
    if (!Number.isInteger(pid) || pid === process.pid || alive(pid)) continue;
    // Its two slots first: a cgroup with child cgroups cannot be removed.
    for (const slot of SLOTS) await rmdir(path.join(parent, name, slot)).catch(() => undefined);
    await rmdir(path.join(parent, name)).catch(() => undefined);
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

let created = 0;

/** The attempt cgroup's two children: the sandbox's own processes (bwrap, its shell, socat) and the agent's. */
const SLOTS = ['sandbox', 'agent'] as const;

/**
 * One attempt's cgroup, for every uid, root included: `pids.max` of the attempt holds its processes (and threads) in
 * all; the agent and what it starts run in its `agent` child, limited to the attempt's process limit, so an agent
 * holding every process it may have still leaves the sandbox's socat the pids it needs to forward a new gateway
 * connection. The sandbox's own processes sit in the `sandbox` child (cgroup v2 allows no processes in a cgroup whose
 * children have controllers; v1 is laid out the same way).
 */
export class PidsCgroup {
  private constructor(readonly dir: string) {}

  /** `total`: the attempt's pids in all; `agent`: the agent's share of them. */
  static async create(root: string, limits: { total: number; agent: number }): Promise<PidsCgroup> {
    const dir = path.join(root, `attempt-${process.pid}-${++created}`);
    await mkdir(dir);
    const cgroup = new PidsCgroup(dir);
    try {
      await writeFile(path.join(dir, 'pids.max'), String(limits.total));
      // v2 (every cgroup has cgroup.subtree_control): the children get pids.max only once the attempt delegates it.
      if (await exists(path.join(dir, 'cgroup.subtree_control')))
        await writeFile(path.join(dir, 'cgroup.subtree_control'), '+pids');
      for (const slot of SLOTS) await mkdir(path.join(dir, slot));
      await writeFile(path.join(dir, 'agent', 'pids.max'), String(limits.agent));
    } catch (e) {
      await cgroup.remove();
      throw e;
    }
    return cgroup;
  }

  /** The agent slot's `cgroup.procs`: the sandbox moves the agent into it (writing 0 moves the writer) before exec'ing it. */
  get agentProcs(): string {
    return path.join(this.dir, 'agent', 'cgroup.procs');
  }

  /** argv prefix that moves the process into the sandbox slot and execs the rest, so every descendant is counted. */
  enter(command: readonly string[]): string[] {
    const fail = `{ echo '${SANDBOX_FAILED_MARK} joining the pids cgroup failed' >&2; exit ${SANDBOX_FAILED_EXIT}; }`;
    return [
      '/bin/sh',
      '-c',
      `echo $$ > "$0/cgroup.procs" || ${fail}; exec "$@"`,
      path.join(this.dir, 'sandbox'),
      ...command,
    ];
  }

  /** Kills what is left in it (normally nothing: the pid namespace went with the agent) and removes it; false if it stays busy. */
  async remove(): Promise<boolean> {
    let removed = true;
    for (const slot of SLOTS) removed = (await removeCgroup(path.join(this.dir, slot))) && removed;
    return (await removeCgroup(this.dir)) && removed;
  }
}

async function removeCgroup(dir: string): Promise<boolean> {
  for (let i = 0; i < 100; i++) {
    try {
      await rmdir(dir);
      return true;
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return true;
      if (code !== 'EBUSY') throw e;
    }
    const pids = (await readFile(path.join(dir, 'cgroup.procs'), 'utf8').catch(() => '')).split('\n').filter(Boolean);
    for (const pid of pids) {
      try {
        process.kill(Number(pid), 'SIGKILL');
      } catch {
        /* exited meanwhile */
      }
    }
    await sleep(20);
  }
  // Only processes stuck in the kernel survive 100 SIGKILLs; an empty-looking leftover cgroup costs nothing.
  return false;
}
