import path from 'node:path';
import type { RolloutLimits } from './sandbox-spec.js';

/** Where the gateway forwarder's unix socket appears inside the sandbox (a fresh tmpfs /run). */
export const SANDBOX_GATEWAY_SOCKET = '/run/volt/gateway.sock';
/** Where the agent slot's cgroup.procs of the attempt's pids cgroup appears inside the sandbox (pids-cgroup.ts). */
const SANDBOX_AGENT_PROCS = '/run/volt/agent.procs';
/** Exit status and stderr line of the wrapper when the sandbox itself failed, so the runner can call it infra. */
export const SANDBOX_FAILED_EXIT = 125;
export const SANDBOX_FAILED_MARK = 'volt-sandbox-failed:';
/** Ports below this need a capability inside the net namespace; the forwarder listens on a high port instead. */
const UNPRIVILEGED_PORT_START = 1024;
/** The loopback port the agent reaches the gateway on inside the sandbox: the gateway's own when unprivileged. */
export const sandboxGatewayPort = (port: number) => (port >= UNPRIVILEGED_PORT_START ? port : 40_000 + port);
/** The uid/gid an attempt runs as when the worker is root (nobody). */
export const SANDBOX_UID = 65534;

export interface SandboxCommandOptions {
  command: readonly string[];
  cwd: string;
  /** The attempt's directory (workdir, task file, output file): the only writable place besides /tmp. */
  attemptDir: string;
  /** Directories hidden behind an empty read-only tmpfs: the data dir, the runner's root, the operator's home. */
  hide: readonly string[];
  /** Directories under a hidden one that the agent still needs to read (its own code), bound read-only again. */
  readOnly: readonly string[];
  /** Host side of the gateway forwarder, bound at SANDBOX_GATEWAY_SOCKET; null: no network at all (the scoring step). */
  gatewaySocket: string | null;
  /** The loopback port the agent's OPENAI_BASE_URL names inside the sandbox. */
  gatewayPort: number;
  limits: RolloutLimits;
  /** Drop to SANDBOX_UID before entering the namespaces (the worker runs as root). */
  dropToNobody: boolean;
  /**
   * The agent slot's cgroup.procs of the attempt's pids cgroup (pids-cgroup.ts), or null: the agent moves itself
   * there before it is exec'd, so the forwarder keeps pids of its own.
   */
  agentCgroupProcs?: string | null;
}

const inside = (dir: string, parent: string) =>
  dir === parent || dir.startsWith(parent.endsWith('/') ? parent : `${parent}/`);

/**
 * argv that runs one agent in a bubblewrap sandbox: new user, pid, net, ipc, uts and cgroup namespaces; the whole
 * file system read-only with the hidden dirs, /tmp and /run replaced by empty tmpfs; the attempt dir bound
 * writable; a socat inside listening on 127.0.0.1:<gatewayPort> that forwards to the gateway socket (the net
 * namespace has nothing else; no socat at all when gatewaySocket is null); the agent exec'd under prlimit (after moving
 * itself into its pids cgroup slot, when it has one). When the agent exits, pid 1 exits and the kernel
 * kills whatever it left in the namespace.
 */
export function sandboxCommand(o: SandboxCommandOptions): string[] {
  const argv: string[] = o.dropToNobody
    ? ['setpriv', `--reuid=${SANDBOX_UID}`, `--regid=${SANDBOX_UID}`, '--clear-groups', '--inh-caps=-all']
    : [];
  // Mapped to uid/gid nobody inside either way; without the drop the kernel still sees the worker's uid.
  const agentProcs = o.gatewaySocket === null ? null : (o.agentCgroupProcs ?? null);
  // Moving into the agent slot needs the host's cgroup namespace: cgroup v2 refuses a move to a cgroup outside the
  // writer's namespace root, which an unshared namespace would put at the sandbox slot. The sandbox still sees the
  // cgroup tree read-only (/sys is), as it would with its own namespace.
  const namespaces =
    agentProcs === null ? ['--unshare-all'] : ['--unshare-ipc', '--unshare-pid', '--unshare-net', '--unshare-uts'];
  argv.push(
    'bwrap',
    ...namespaces,
    '--unshare-user',
    '--uid',
    String(SANDBOX_UID),
    '--gid',
    String(SANDBOX_UID),
    '--cap-drop',
    'ALL',
  );
  argv.push('--die-with-parent', '--new-session', '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc');
  // /run holds host unix sockets (a net namespace does not cover those), so it is replaced too.
  const hidden = [...new Set(['/tmp', '/run', '/var/tmp', ...o.hide.map((d) => path.resolve(d))])];
  // Parents before children, so a hidden dir inside another hidden one is mounted on the tmpfs, not under it.
  hidden.sort((a, b) => a.length - b.length);
  for (const dir of hidden) argv.push('--tmpfs', dir);
  for (const dir of o.readOnly.map((d) => path.resolve(d))) {
    if (hidden.some((h) => inside(dir, h))) argv.push('--ro-bind', dir, dir);
  }
  // A readOnly dir may contain a hidden one (the data dir inside the repo): hide it again on top.
  for (const dir of hidden)
    if (o.readOnly.some((r) => inside(dir, path.resolve(r)) && dir !== path.resolve(r))) argv.push('--tmpfs', dir);
  argv.push('--bind', o.attemptDir, o.attemptDir);
  if (o.gatewaySocket !== null) argv.push('--ro-bind', o.gatewaySocket, SANDBOX_GATEWAY_SOCKET);
  if (agentProcs !== null) argv.push('--bind', agentProcs, SANDBOX_AGENT_PROCS);
  // Last, once every mount point in them exists: the hidden dirs are empty and read-only.
  for (const dir of hidden) if (dir !== '/tmp' && dir !== '/run') argv.push('--remount-ro', dir);
  argv.push('--chdir', o.cwd);
  const hexPort = o.gatewayPort.toString(16).toUpperCase().padStart(4, '0');
  const limits = [
    `--data=${o.limits.memoryMb * 1024 * 1024}`,
    `--nproc=${o.limits.processes}`,
    `--nofile=${o.limits.openFiles}`,
  ];
  if (o.limits.cpuSec !== null) limits.push(`--cpu=${o.limits.cpuSec}`);
  // The scoring step: no forwarder, so the net namespace has nothing but its own loopback.
  if (o.gatewaySocket === null) {
    argv.push('prlimit', ...limits, '--', ...o.command);
    return argv;
  }
  // socat binds within milliseconds; the agent starts only once /proc/net/tcp lists it listening.
  const failed = (what: string) => `{ echo '${SANDBOX_FAILED_MARK} ${what}' >&2; exit ${SANDBOX_FAILED_EXIT}; }`;
  const fail = (why: string) => failed(`gateway forwarder ${why}`);
  const script = [
    `socat TCP-LISTEN:${o.gatewayPort},bind=127.0.0.1,fork,reuseaddr UNIX-CONNECT:${SANDBOX_GATEWAY_SOCKET} &`,
    'fwd=$! i=0',
    `until grep -q ' 0100007F:${hexPort} 00000000:0000 0A' /proc/net/tcp; do`,
    `  kill -0 $fwd 2>/dev/null || ${fail('exited')}`,
    `  i=$((i+1)); [ $i -gt 5000 ] && ${fail('did not start')}`,
    'done',
    ...(agentProcs === null
      ? []
      : [`echo 0 > ${SANDBOX_AGENT_PROCS} || ${failed('joining the agent pids cgroup failed')}`]),
    `exec prlimit ${limits.join(' ')} -- "$@"`,
  ].join('\n');
  argv.push('/bin/sh', '-c', script, 'volt-sandbox', ...o.command);
  return argv;
}
