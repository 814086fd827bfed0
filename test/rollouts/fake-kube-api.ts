import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Job } from 'kubernetes-models/batch/v1/Job';
import type { V1Job, V1Pod, V1PodSpec } from '@kubernetes/client-node';
import type { PlayedContainer } from './play-pod.js';

/**
 * A FAKE Kubernetes API server (no real cluster can run here), speaking only what KubeRunner uses:
 * create/list/get/delete Jobs, list pods by label, read a pod's log. Every Job it receives is validated against
 * the Kubernetes schema (kubernetes-models) and rejected with a 422 Status when invalid; it is stricter than
 * a real cluster in refusing pod templates that break the "restricted" Pod Security profile (403).
 * Tests drive pod and Job status by hand through the methods below.
 */
export class FakeKubeApi {
  readonly jobs = new Map<string, V1Job>();
  readonly pods = new Map<string, V1Pod>();
  readonly logs = new Map<string, string>();
  readonly deletes: { name: string; propagationPolicy: string | null }[] = [];
  readonly rejected: { code: number; message: string }[] = [];
  /** `METHOD path` of every request, in order. */
  readonly requests: string[] = [];
  private failures: number[] = [];
  private server: Server | null = null;

  constructor(readonly token = `fake-${randomUUID()}`) {}

  async start(): Promise<string> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((r) => this.server?.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  stop(): Promise<void> {
    // The client keeps connections alive; close them or close() waits for their idle timeout.
    this.server?.closeAllConnections();
    return new Promise((r) => (this.server ? this.server.close(() => r()) : r()));
  }

  /** The next `n` API calls fail with HTTP `code` (an unhealthy API server). */
  failNext(n: number, code = 503): void {
    this.failures.push(...Array<number>(n).fill(code));
  }

  podOf(jobName: string): V1Pod {
    const pod = [...this.pods.values()].find((p) => p.metadata?.labels?.['batch.kubernetes.io/job-name'] === jobName);
    if (!pod) throw new Error(`fake: no pod for Job ${jobName}`);
    return pod;
  }

  /**
   * The agent exited with `exitCode`: its wrapper (an init container) ended 0 and the score step reported the status
   * and, unless undefined, the output file, with the Job's nonce; pod Succeeded, Job Complete.
   */
  finish(jobName: string, exitCode: number, log = '', output?: string): void {
    const nonce = this.jobs.get(jobName)?.metadata?.annotations?.['volt.dev/score-nonce'];
    if (!nonce) throw new Error(`fake: Job ${jobName} has no score nonce`);
    const report = [
      `::${nonce} agent-exit ${exitCode}`,
      ...(output === undefined ? [] : [`::${nonce} output-begin`, output, `::${nonce} output-end`]),
    ];
    this.finishScored(jobName, log, `${report.join('\n')}\n`);
  }

  /** The pod ran both containers: the agent (init, its wrapper always exits 0), then the score step. */
  finishScored(jobName: string, agentLog: string, scoreLog: string, scoreExit = 0): void {
    const pod = this.podOf(jobName);
    const terminated = (name: string, exitCode: number) => ({
      name,
      image: 'x',
      imageID: '',
      ready: false,
      restartCount: 0,
      state: { terminated: { exitCode, reason: exitCode === 0 ? 'Completed' : 'Error' } },
    });
    pod.status = {
      phase: scoreExit === 0 ? 'Succeeded' : 'Failed',
      initContainerStatuses: [terminated('agent', 0)],
      containerStatuses: [terminated('score', scoreExit)],
    };
    this.logs.set(pod.metadata?.name as string, agentLog);
    this.logs.set(`${pod.metadata?.name as string}/score`, scoreLog);
    this.setJobCondition(
      jobName,
      scoreExit === 0 ? 'Complete' : 'Failed',
      scoreExit === 0 ? 'Completed' : 'BackoffLimitExceeded',
    );
  }

  /**
   * The FAKE kubelet played the pod (play-pod.ts): each container's exit and log, and the Job's condition from them
   * (DeadlineExceeded when the pod was killed for activeDeadlineSeconds).
   */
  finishPlayed(jobName: string, containers: readonly PlayedContainer[], deadlineExceeded = false): void {
    const pod = this.podOf(jobName);
    const podName = pod.metadata?.name as string;
    const terminated = (c: PlayedContainer) => ({
      name: c.name,
      image: 'x',
      imageID: '',
      ready: false,
      restartCount: 0,
      state: { terminated: { exitCode: c.exitCode, reason: c.exitCode === 0 ? 'Completed' : 'Error' } },
    });
    const failed = containers.some((c) => c.exitCode !== 0);
    pod.status = {
      phase: failed ? 'Failed' : 'Succeeded',
      initContainerStatuses: containers.filter((c) => c.init).map(terminated),
      containerStatuses: containers.filter((c) => !c.init).map(terminated),
    };
    for (const c of containers) this.logs.set(c.name === 'agent' ? podName : `${podName}/${c.name}`, c.log);
    if (deadlineExceeded)
      this.setJobCondition(jobName, 'Failed', 'DeadlineExceeded', 'Job was active longer than specified deadline');
    else this.setJobCondition(jobName, failed ? 'Failed' : 'Complete', failed ? 'BackoffLimitExceeded' : 'Completed');
  }

  /** The pod's prepare step (task setup) exited with `exitCode`: the agent never ran, the Job failed. */
  failPrepare(jobName: string, exitCode: number, log: string): void {
    const pod = this.podOf(jobName);
    pod.status = {
      phase: 'Failed',
      initContainerStatuses: [
        {
          name: 'prepare',
          image: 'x',
          imageID: '',
          ready: false,
          restartCount: 0,
          state: { terminated: { exitCode, reason: 'Error' } },
        },
      ],
    };
    this.logs.set(`${pod.metadata?.name as string}/prepare`, log);
    this.setJobCondition(jobName, 'Failed', 'BackoffLimitExceeded');
  }

  evict(jobName: string): void {
    this.podOf(jobName).status = {
      phase: 'Failed',
      reason: 'Evicted',
      message: 'The node was low on resource: memory.',
    };
    this.setJobCondition(jobName, 'Failed', 'BackoffLimitExceeded');
  }

  exceedDeadline(jobName: string): void {
    this.podOf(jobName).status = {
      phase: 'Failed',
      initContainerStatuses: [
        {
          name: 'agent',
          image: 'x',
          imageID: '',
          ready: false,
          restartCount: 0,
          state: { terminated: { exitCode: 137, reason: 'Error' } },
        },
      ],
    };
    this.setJobCondition(jobName, 'Failed', 'DeadlineExceeded', 'Job was active longer than specified deadline');
  }

  failImagePull(jobName: string): void {
    this.podOf(jobName).status = {
      phase: 'Pending',
      initContainerStatuses: [
        {
          name: 'agent',
          image: 'x',
          imageID: '',
          ready: false,
          restartCount: 0,
          state: {
            waiting: { reason: 'ImagePullBackOff', message: 'Back-off pulling image "registry.invalid/agent:1"' },
          },
        },
      ],
    };
  }

  loseNode(jobName: string): void {
    this.podOf(jobName).status = {
      phase: 'Unknown',
      reason: 'NodeLost',
      message: 'Node node-1 which was running pod is unresponsive',
    };
  }

  private setJobCondition(jobName: string, type: string, reason: string, message = ''): void {
    const job = this.jobs.get(jobName);
    if (!job) throw new Error(`fake: no Job ${jobName}`);
    job.status = { ...job.status, conditions: [{ type, status: 'True', reason, message }] };
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake');
    this.requests.push(`${req.method} ${url.pathname}`);
    const send = (code: number, body: unknown, type = 'application/json') => {
      res.writeHead(code, { 'content-type': type });
      res.end(typeof body === 'string' ? body : JSON.stringify(body));
    };
    const status = (code: number, reason: string, message: string) => {
      if (code >= 400) this.rejected.push({ code, message });
      send(code, {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: code < 400 ? 'Success' : 'Failure',
        message,
        reason,
        code,
      });
    };
    if (req.headers.authorization !== `Bearer ${this.token}`) return status(401, 'Unauthorized', 'Unauthorized');
    const failure = this.failures.shift();
    if (failure) return status(failure, 'ServiceUnavailable', 'fake: injected API failure');
    let raw = '';
    for await (const c of req) raw += c;

    const jobs = url.pathname.match(/^\/apis\/batch\/v1\/namespaces\/([^/]+)\/jobs(?:\/([^/]+))?$/);
    const podList = url.pathname.match(/^\/api\/v1\/namespaces\/([^/]+)\/pods$/);
    const podLog = url.pathname.match(/^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/log$/);
    const selected = <T extends V1Job | V1Pod>(items: Iterable<T>): T[] | null => {
      const selector = url.searchParams.get('labelSelector') ?? '';
      if (!/^([\w./-]+=[\w.-]+)(,[\w./-]+=[\w.-]+)*$/.test(selector)) return null;
      const wanted = selector.split(',').map((kv) => kv.split('=') as [string, string]);
      return [...items].filter((o) => wanted.every(([k, v]) => o.metadata?.labels?.[k] === v));
    };
    if (jobs && req.method === 'POST' && !jobs[2]) return this.createJob(jobs[1] as string, raw, send, status);
    if (jobs && req.method === 'GET' && !jobs[2]) {
      const items = selected(this.jobs.values());
      if (!items) return status(400, 'BadRequest', 'fake: unsupported labelSelector');
      return send(200, { kind: 'JobList', apiVersion: 'batch/v1', metadata: {}, items });
    }
    if (jobs?.[2]) {
      const job = this.jobs.get(jobs[2]);
      if (!job) return status(404, 'NotFound', `jobs.batch "${jobs[2]}" not found`);
      if (req.method === 'GET') return send(200, job);
      if (req.method === 'DELETE') {
        const body = raw ? (JSON.parse(raw) as { propagationPolicy?: string }) : {};
        this.deletes.push({
          name: jobs[2],
          propagationPolicy: url.searchParams.get('propagationPolicy') ?? body.propagationPolicy ?? null,
        });
        this.jobs.delete(jobs[2]);
        for (const [name, pod] of this.pods)
          if (pod.metadata?.labels?.['batch.kubernetes.io/job-name'] === jobs[2]) this.pods.delete(name);
        return status(200, '', 'deleted');
      }
    }
    if (podList && req.method === 'GET') {
      const items = selected(this.pods.values());
      if (!items) return status(400, 'BadRequest', 'fake: unsupported labelSelector');
      return send(200, { kind: 'PodList', apiVersion: 'v1', metadata: {}, items });
    }
    if (podLog && req.method === 'GET') {
      const container = url.searchParams.get('container');
      const log =
        (container && container !== 'agent' ? this.logs.get(`${podLog[2] as string}/${container}`) : undefined) ??
        this.logs.get(podLog[2] as string);
      if (log === undefined) return status(404, 'NotFound', `pods "${podLog[2]}" not found`);
      const limit = Number(url.searchParams.get('limitBytes') ?? Infinity);
      const tailLines = url.searchParams.get('tailLines');
      const lines = tailLines
        ? log
            .split(/(?<=\n)/)
            .slice(-Number(tailLines))
            .join('')
        : log;
      return send(200, Buffer.from(lines).subarray(0, limit).toString(), 'text/plain');
    }
    return status(404, 'NotFound', `fake: no route ${req.method} ${url.pathname}`);
  }

  private createJob(
    namespace: string,
    raw: string,
    send: (c: number, b: unknown) => void,
    status: (c: number, r: string, m: string) => void,
  ): void {
    const body = JSON.parse(raw) as V1Job;
    try {
      new Job(body as ConstructorParameters<typeof Job>[0]).validate();
    } catch (e) {
      return status(422, 'Invalid', `Job is invalid: ${(e as Error).message}`);
    }
    const name = body.metadata?.name ?? '';
    const labelProblems = Object.entries({ ...body.metadata?.labels, ...body.spec?.template.metadata?.labels }).filter(
      ([k, v]) =>
        !/^([a-z0-9.-]{1,253}\/)?[A-Za-z0-9]([\w.-]{0,61}[A-Za-z0-9])?$/.test(k) ||
        !/^([A-Za-z0-9]([\w.-]{0,61}[A-Za-z0-9])?)?$/.test(v),
    );
    if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(name) || labelProblems.length) {
      return status(422, 'Invalid', `Job "${name}" is invalid: name or labels ${JSON.stringify(labelProblems)}`);
    }
    if (body.metadata?.namespace && body.metadata.namespace !== namespace)
      return status(400, 'BadRequest', 'namespace mismatch');
    const violations = restrictedViolations(body.spec?.template.spec);
    if (violations.length)
      return status(403, 'Forbidden', `violates PodSecurity "restricted:latest": ${violations.join(', ')}`);
    if (this.jobs.has(name)) return status(409, 'AlreadyExists', `jobs.batch "${name}" already exists`);
    const uid = randomUUID();
    const created = new Date().toISOString();
    const job: V1Job = {
      ...body,
      metadata: { ...body.metadata, namespace, uid, creationTimestamp: created as unknown as Date },
      status: {},
    };
    this.jobs.set(name, job);
    const podName = `${name.slice(0, 57)}-${randomBytes(3).toString('hex').slice(0, 5)}`;
    this.pods.set(podName, {
      metadata: {
        name: podName,
        namespace,
        creationTimestamp: created as unknown as Date,
        labels: {
          ...body.spec?.template.metadata?.labels,
          'batch.kubernetes.io/job-name': name,
          'batch.kubernetes.io/controller-uid': uid,
        },
      },
      spec: body.spec?.template.spec,
      status: { phase: 'Pending' },
    });
    send(201, job);
  }
}

/** The "restricted" Pod Security checks a rollout pod must pass. */
function restrictedViolations(spec: V1PodSpec | undefined): string[] {
  if (!spec) return ['no pod spec'];
  const out: string[] = [];
  for (const c of [...(spec.initContainers ?? []), ...spec.containers]) {
    const sc = c.securityContext;
    if (sc?.allowPrivilegeEscalation !== false) out.push(`${c.name}: allowPrivilegeEscalation != false`);
    if (!sc?.capabilities?.drop?.includes('ALL')) out.push(`${c.name}: capabilities.drop != ALL`);
    if ((sc?.runAsNonRoot ?? spec.securityContext?.runAsNonRoot) !== true) out.push(`${c.name}: runAsNonRoot != true`);
    const seccomp = sc?.seccompProfile?.type ?? spec.securityContext?.seccompProfile?.type;
    if (seccomp !== 'RuntimeDefault' && seccomp !== 'Localhost') out.push(`${c.name}: seccompProfile`);
  }
  if (spec.volumes?.some((v) => v.hostPath)) out.push('hostPath volumes');
  if (spec.hostNetwork || spec.hostPID || spec.hostIPC) out.push('host namespaces');
  return out;
}
