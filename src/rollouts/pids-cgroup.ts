import { access, mkdir, readdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { SANDBOX_FAILED_EXIT, SANDBOX_FAILED_MARK } from './sandbox-command.js';

/** Where this worker creates its attempts' pids cgroups, or why it cannot. */
export type PidsCgroupRoot = { dir: string; reason?: undefined } | { dir: null; reason: string };

const PARENT = 'volt-rollouts';

/** Mount points of the cgroup hierarchies that have the pids controller, with this process's cgroup in each. */
async function pidsHierarchies(): Promise<{ dir: string; v2: boolean }[]> {
  const [mounts, own] = await Promise.all([readFile('/proc/self/mounts', 'utf8'), readFile('/proc/self/cgroup', 'utf8')]);
  const found: { dir: string; v2: boolean }[] = [];
  for (const line of mounts.split('\n')) {
    const [, mountPoint, type, options] = line.split(' ');
    if (!mountPoint || !options) continue;
    if (type === 'cgroup2') {
      const self = /^0::(.*)$/m.exec(own)?.[1];
      const dir = self === undefined ? null : path.join(mountPoint, self);
      if (dir && (await readFile(path.join(dir, 'cgroup.controllers'), 'utf8').catch(() => '')).split(/\s+/).includes('pids')) found.push({ dir, v2: true });
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
      if (v2 && !(await exists(path.join(parent, 'pids.max')))) await writeFile(path.join(dir, 'cgroup.subtree_control'), '+pids');
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

const exists = (file: string) => access(file).then(() => true, () => false);

/** Attempt cgroups a killed worker left behind (named after its pid, now gone); busy or foreign ones stay. */
async function removeAbandoned(parent: string): Promise<void> {
  for (const name of await readdir(parent)) {
    const pid = Number(/^attempt-(\d+)-\d+$/.exec(name)?.[1] ?? NaN);
    if (!Number.isInteger(pid) || pid === process.pid || alive(pid)) continue;
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

/** One attempt's cgroup: pids.max is the attempt's process (and thread) limit, for every uid, root included. */
export class PidsCgroup {
  private constructor(readonly dir: string) {}

  static async create(root: string, max: number): Promise<PidsCgroup> {
    const dir = path.join(root, `attempt-${process.pid}-${++created}`);
    await mkdir(dir);
    try {
      await writeFile(path.join(dir, 'pids.max'), String(max));
    } catch (e) {
      await rmdir(dir).catch(() => undefined);
      throw e;
    }
    return new PidsCgroup(dir);
  }

  /** argv prefix that moves the process into this cgroup and execs the rest, so every descendant is counted. */
  enter(command: readonly string[]): string[] {
    const fail = `{ echo '${SANDBOX_FAILED_MARK} joining the pids cgroup failed' >&2; exit ${SANDBOX_FAILED_EXIT}; }`;
    return ['/bin/sh', '-c', `echo $$ > "$0/cgroup.procs" || ${fail}; exec "$@"`, this.dir, ...command];
  }

  /** Kills what is left in it (normally nothing: the pid namespace went with the agent) and removes it; false if it stays busy. */
  async remove(): Promise<boolean> {
    for (let i = 0; i < 100; i++) {
      try {
        await rmdir(this.dir);
        return true;
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code === 'ENOENT') return true;
        if (code !== 'EBUSY') throw e;
      }
      const pids = (await readFile(path.join(this.dir, 'cgroup.procs'), 'utf8').catch(() => '')).split('\n').filter(Boolean);
      for (const pid of pids) {
        try {
          process.kill(Number(pid), 'SIGKILL');
        } catch { /* exited meanwhile */ }
      }
      await sleep(20);
    }
    // Only processes stuck in the kernel survive 100 SIGKILLs; an empty-looking leftover cgroup costs nothing.
    return false;
  }
}
