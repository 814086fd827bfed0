import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

const INSTALL_FIX =
  'install bubblewrap, socat and util-linux (scripts/setup.sh does it as root: apt-get install bubblewrap socat) and ' +
  'allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, or ' +
  'kernel.apparmor_restrict_unprivileged_userns=0 on Ubuntu); or run without isolation with rollouts.sandbox: "none" ' +
  'in the run config (see docs/sandbox.md); in a container, like the image of deploy/ (no bubblewrap, no user ' +
  'namespaces in a pod), run rollouts as Kubernetes Jobs instead: rollouts.runner: "kubernetes" (deploy/README.md)';

/** Sandboxing was asked for and this machine cannot provide it; the message says why and how to fix it. */
export class SandboxUnavailableError extends Error {
  constructor(reason: string, fix = INSTALL_FIX) {
    super(`rollout sandbox (bubblewrap) unavailable: ${reason}. Fix: ${fix}.`);
    this.name = 'SandboxUnavailableError';
  }
}

let probe: Promise<void> | null = null;

/** Resolves once a throwaway sandbox ran (checked once per process); rejects with SandboxUnavailableError. */
export function checkSandbox(dropToNobody: boolean): Promise<void> {
  probe ??= (async () => {
    for (const tool of ['bwrap', 'socat', 'prlimit', ...(dropToNobody ? ['setpriv'] : [])]) {
      try {
        await run('sh', ['-c', `command -v ${tool}`]);
      } catch {
        throw new SandboxUnavailableError(`${tool} is not on PATH`);
      }
    }
    const prefix = dropToNobody
      ? ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', '--inh-caps=-all']
      : [];
    try {
      await run(
        prefix[0] ?? 'bwrap',
        [
          ...prefix.slice(1),
          ...(prefix.length ? ['bwrap'] : []),
          '--unshare-all',
          '--ro-bind',
          '/',
          '/',
          '--proc',
          '/proc',
          'true',
        ],
        { timeout: 10_000 },
      );
    } catch (e) {
      const stderr = String((e as { stderr?: string }).stderr ?? (e as Error).message).trim();
      throw new SandboxUnavailableError(`a test sandbox failed (${stderr || 'no output'})`);
    }
  })();
  probe.catch(() => (probe = null));
  return probe;
}

/**
 * What a cpu worker says at start: why this machine cannot sandbox local rollouts (checkSandbox's message), or null.
 * Runs on the Kubernetes runner never need it, so a worker without it still starts.
 */
export async function sandboxProblem(dropToNobody: boolean): Promise<string | null> {
  try {
    await checkSandbox(dropToNobody);
    return null;
  } catch (e) {
    return (e as Error).message;
  }
}
