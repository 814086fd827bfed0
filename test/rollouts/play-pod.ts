import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import type { V1Container, V1Job } from '@kubernetes/client-node';

const run = promisify(execFile);

/** One container of the pod, run in bwrap: the pod's volumes (host dirs) bound at the container's mount paths. */
async function playContainer(
  c: V1Container,
  volumes: Record<string, string>,
): Promise<{ log: string; exitCode: number }> {
  const argv = [
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
  for (const e of c.env ?? []) argv.push('--setenv', e.name, e.value ?? '');
  argv.push('--chdir', c.workingDir ?? '/', ...(c.command ?? []));
  try {
    const { stdout, stderr } = await run('bwrap', argv, { timeout: 20_000 });
    return { log: stdout + stderr, exitCode: 0 };
  } catch (e) {
    const err = e as { code?: number; stdout?: string; stderr?: string };
    return { log: (err.stdout ?? '') + (err.stderr ?? ''), exitCode: typeof err.code === 'number' ? err.code : 1 };
  }
}

/**
 * FAKE kubelet (no cluster runs here): plays a Job's pod for real, its init containers in order (stopping at the
 * first that fails, as Kubernetes does) and then its container, each in bwrap with the pod's volumes as host dirs
 * under `dir` and its downward-API files written from the pod template's annotations.
 */
export async function playPod(
  job: V1Job,
  dir: string,
): Promise<{ logs: Record<string, string>; failed: { name: string; exitCode: number } | null }> {
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
  for (const c of [...(pod.initContainers ?? []), ...pod.containers]) {
    const { log, exitCode } = await playContainer(c, volumes);
    logs[c.name] = log;
    if (exitCode !== 0) return { logs, failed: { name: c.name, exitCode } };
  }
  return { logs, failed: null };
}
