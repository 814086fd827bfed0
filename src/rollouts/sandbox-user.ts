import { chmod, lchown, mkdir, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { findPidsCgroupRoot, type PidsCgroupRoot } from './pids-cgroup.js';
import { SANDBOX_UID } from './sandbox-command.js';
import { SandboxUnavailableError } from './sandbox-probe.js';

/** Who a sandboxed attempt runs as on the host, and what holds its process limit. */
export interface SandboxIdentity {
  /** Run as nobody (the worker is root and nobody can reach every bind source). */
  dropToNobody: boolean;
  /** Per-attempt pids cgroups go here (only for agents that run as uid 0 on the host); null: RLIMIT_NPROC holds the limit. */
  cgroupRoot: string | null;
}

/**
 * Decides the host uid of sandboxed attempts and how `rollouts.limits.processes` is held. RLIMIT_NPROC binds every
 * uid but 0, so a root worker whose agents cannot run as nobody needs a pids cgroup per attempt, or refuses.
 */
export class SandboxUser {
  private readonly asRoot = process.getuid?.() === 0;
  private readonly traversable = new Map<string, Promise<boolean>>();
  private cgroups: Promise<PidsCgroupRoot> | null = null;

  /** `pidsCgroup`: 'auto' finds one (pids-cgroup.ts); a directory uses that one; null never uses one. */
  constructor(
    private readonly root: string,
    private readonly pidsCgroup: string | null | 'auto',
  ) {}

  /** Throws SandboxUnavailableError when the process limit could not be held: retrying cannot fix the machine. */
  async identity(readOnly: readonly string[]): Promise<SandboxIdentity> {
    const blocked = await this.untraversable(readOnly);
    const dropToNobody = this.asRoot && blocked === null;
    // Only where RLIMIT_NPROC cannot bind: the cgroup also counts the sandbox's socat, which the rlimit leaves out.
    if (!this.asRoot || dropToNobody) return { dropToNobody, cgroupRoot: null };
    const found = await this.cgroupRoot();
    if (found.dir !== null) return { dropToNobody, cgroupRoot: found.dir };
    throw new SandboxUnavailableError(
      `rollouts.limits.processes cannot be held: the worker runs as root, its agents cannot run as nobody because ${blocked} is ` +
        `not traversable by others (the kernel does not apply RLIMIT_NPROC to uid 0), and ${found.reason}`,
      `chmod o+x on ${blocked} and each of its parents (or keep the checkout and VOLT_DATA_DIR where others can traverse), ` +
        'run the worker as a non-root user, or give it a writable pids cgroup (a writable /sys/fs/cgroup; see docs/sandbox.md)',
    );
  }

  /** Hands the attempt dir to nobody, who then owns it and nothing else. */
  async handOver(dir: string, identity: SandboxIdentity): Promise<void> {
    if (identity.dropToNobody) await chownTree(dir, SANDBOX_UID);
  }

  private cgroupRoot(): Promise<PidsCgroupRoot> {
    if (this.pidsCgroup === null)
      return Promise.resolve({ dir: null, reason: 'the runner was built without a pids cgroup' });
    if (this.pidsCgroup !== 'auto') return Promise.resolve({ dir: this.pidsCgroup });
    this.cgroups ??= findPidsCgroupRoot();
    return this.cgroups;
  }

  /** The first of the runner's root and the read-only dirs that nobody cannot reach, or null (bwrap resolves bind sources as the caller). */
  private async untraversable(readOnly: readonly string[]): Promise<string | null> {
    if (!this.asRoot) return null;
    const check = (dir: string) => {
      let known = this.traversable.get(dir);
      if (!known) {
        known =
          dir === this.root
            ? mkdir(dir, { recursive: true })
                .then(() => chmod(dir, 0o711))
                .then(() => traversableByOthers(dir))
            : traversableByOthers(dir).catch(() => false);
        this.traversable.set(dir, known);
      }
      return known;
    };
    const dirs = [this.root, ...readOnly];
    const all = await Promise.all(dirs.map(check));
    const at = all.indexOf(false);
    return at < 0 ? null : await blockingParent(dirs[at] as string);
  }
}

async function traversableByOthers(dir: string): Promise<boolean> {
  return (await blockingParent(dir)) === null;
}

/** The innermost directory on the way to `dir` that others cannot traverse, or null. */
async function blockingParent(dir: string): Promise<string | null> {
  let blocked: string | null = null;
  for (let d = path.resolve(dir); ; d = path.dirname(d)) {
    if (((await stat(d).catch(() => null))?.mode ?? 0) % 2 === 0) blocked ??= d;
    if (d === path.dirname(d)) return blocked;
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
