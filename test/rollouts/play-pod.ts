import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import type { V1Container, V1Job } from '@kubernetes/client-node';

const run = promisify(execFile);

/** What a container runtime and Kubernetes put in every container's env before the pod's own `env` (which wins). */
const RUNTIME_ENV = {
  PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
  KUBERNETES_SERVICE_HOST: '10.96.0.1',
  KUBERNETES_SERVICE_PORT: '443',
};

/** One container the FAKE kubelet ran: its exit status and its log (stdout and stderr, as Kubernetes merges them). */
export interface PlayedContainer {
  name: string;
  init: boolean;
  exitCode: number;
  log: string;
}

/**
 * One container of the pod, run in bwrap: the pod's volumes (host dirs) bound at the container's mount paths, and
 * only the environment a container would have: the runtime's, the image's `imageEnv`, then the container's own.
 */
async function playContainer(
  c: V1Container,
  volumes: Record<string, string>,
  baseEnv: Record<string, string>,
  timeoutMs: number,
): Promise<{ log: string; exitCode: number; killed: boolean }> {
  const argv = [
    '--clearenv',
    '--unshare-all',
    '--die-with-parent',
    '--ro-bind',
    '/usr',
    '/usr',
    '--symlink',
    'usr/bin',
    '/bin',
    '--symlink',
    'usr/lib',
    '/lib',
    '--symlink',
    'usr/lib64',
    '/lib64',
    '--ro-bind',
    '/etc',
    '/etc',
    '--proc',
    '/proc',
    '--dev',
    '/dev',
  ];
  for (const m of c.volumeMounts ?? []) argv.push(m.readOnly ? '--ro-bind' : '--bind', volumes[m.name]!, m.mountPath);
  for (const [name, value] of Object.entries(baseEnv)) argv.push('--setenv', name, value);
  for (const e of c.env ?? []) argv.push('--setenv', e.name, e.value ?? '');
  argv.push('--chdir', c.workingDir ?? '/', ...(c.command ?? []));
  try {
    const { stdout, stderr } = await run('bwrap', argv, { timeout: timeoutMs, killSignal: 'SIGKILL', env: {} });
    return { log: stdout + stderr, exitCode: 0, killed: false };
  } catch (e) {
    const err = e as { code?: number; killed?: boolean; stdout?: string; stderr?: string };
    return {
      log: (err.stdout ?? '') + (err.stderr ?? ''),
      exitCode: typeof err.code === 'number' ? err.code : 137,
      killed: err.killed === true,
    };
  }
}

/**
 * FAKE kubelet (no cluster runs here): plays a Job's pod for real, its init containers in order (stopping at the
 * first that fails, as Kubernetes does) and then its container, each in bwrap with the pod's volumes as host dirs
 * under `dir` and its downward-API files written from the pod template's annotations. `imageEnv` stands for the
 * image's ENV lines. The Job's activeDeadlineSeconds is kept (at most 20 s here): past it the pod is killed, as the
 * Job controller does.
 */
export async function playPod(
  job: V1Job,
  dir: string,
  imageEnv: Record<string, string> = {},
): Promise<{
  logs: Record<string, string>;
  failed: { name: string; exitCode: number } | null;
  containers: PlayedContainer[];
  deadlineExceeded: boolean;
}> {
  const pod = job.spec!.template.spec!;
  const annotations = job.spec!.template.metadata!.annotations!;
  const volumes: Record<string, string> = {};
  for (const v of pod.volumes ?? []) {
    volumes[v.name] = path.join(dir, job.metadata!.name!, v.name);
    await mkdir(volumes[v.name]!, { recursive: true });
    for (const item of v.downwardAPI?.items ?? []) {
      const key = /metadata\.annotations\['(.+)'\]/.exec(item.fieldRef!.fieldPath)![1]!;
      await writeFile(path.join(volumes[v.name]!, item.path), annotations[key]!);
    }
  }
  const logs: Record<string, string> = {};
  const containers: PlayedContainer[] = [];
  const baseEnv = { ...RUNTIME_ENV, HOSTNAME: `${job.metadata!.name!.slice(0, 57)}-played`, ...imageEnv };
  const init = new Set((pod.initContainers ?? []).map((c) => c.name));
  const deadline = performance.now() + Math.min(job.spec!.activeDeadlineSeconds ?? 20, 20) * 1000;
  for (const c of [...(pod.initContainers ?? []), ...pod.containers]) {
    const { log, exitCode, killed } = await playContainer(
      c,
      volumes,
      baseEnv,
      Math.max(1, Math.round(deadline - performance.now())),
    );
    logs[c.name] = log;
    containers.push({ name: c.name, init: init.has(c.name), exitCode, log });
    if (exitCode !== 0) return { logs, failed: { name: c.name, exitCode }, containers, deadlineExceeded: killed };
  }
  return { logs, failed: null, containers, deadlineExceeded: false };
}
