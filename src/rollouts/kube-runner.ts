import { ApiException, BatchV1Api, CoreV1Api, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { parseFrozen } from '../config/errors.js';
import { keys } from '../storage/keys.js';
import { parseKubeRunnerConfig, type KubeRunnerConfig, type KubeRunnerConfigInput } from './kube-config.js';
import { JobPoller } from './kube-job-poller.js';
import {
  AGENT_CONTAINER,
  KUBE_WORKSPACE,
  NONCE_ANNOTATION,
  buildRolloutJob,
  jobDeadlineSec,
  jobName,
} from './kube-job.js';
import {
  PREPARE_CONTAINER,
  SCORE_CONTAINER,
  newNonce,
  parseScoringLog,
  podExec,
  type PodScoring,
} from './kube-scoring.js';
import { classifyJob, reportedOutcome, type KubeVerdict } from './kube-outcome.js';
import { uploadLogs } from './log-sink.js';
import { Semaphore } from './semaphore.js';
import {
  RolloutCancelledError,
  rolloutSpecSchema,
  type LogSink,
  type RolloutRunner,
  type RolloutSpec,
  type RolloutSpecInput,
  type RunOptions,
} from './spec.js';
import { TokenBucket } from './token-bucket.js';
import type { RunnerResult } from '../contracts/rollout.js';

/** `status message` of a Kubernetes API failure, for the operator. */
function apiError(what: string, e: unknown): string {
  if (e instanceof ApiException) {
    const body = typeof e.body === 'string' ? e.body : JSON.stringify(e.body);
    let message = body;
    try {
      message = (JSON.parse(body) as { message?: string }).message ?? body;
    } catch {
      /* not JSON: keep the raw body */
    }
    return `${what}: HTTP ${e.code}: ${message}`;
  }
  return `${what}: ${(e as Error).message}`;
}

/** Runs each rollout attempt as one Kubernetes Job, polls it (shared LISTs) to an outcome, and keeps the pod's log. */
export class KubeRunner implements RolloutRunner {
  private readonly cfg: Readonly<KubeRunnerConfig>;
  private readonly batch: BatchV1Api;
  private readonly core: CoreV1Api;
  private readonly creates: TokenBucket;
  private readonly slots: Semaphore;
  private readonly poller: JobPoller;

  constructor(
    kubeConfig: KubeConfig,
    config: KubeRunnerConfigInput,
    private readonly logs: LogSink,
  ) {
    this.cfg = parseKubeRunnerConfig(config);
    this.batch = kubeConfig.makeApiClient(BatchV1Api);
    this.core = kubeConfig.makeApiClient(CoreV1Api);
    this.creates = new TokenBucket(this.cfg.createsPerSecond, this.cfg.createBurst);
    this.slots = new Semaphore(this.cfg.concurrency);
    this.poller = new JobPoller(this.batch, this.core, this.cfg.namespace, this.cfg.pollIntervalMs);
  }

  async run(input: RolloutSpecInput, signal: AbortSignal, options: RunOptions = {}): Promise<RunnerResult> {
    const spec = parseFrozen(rolloutSpecSchema, input, 'rollout spec');
    let release: () => void;
    try {
      release = await this.slots.acquire(signal);
      await this.creates.take(signal).catch((e: unknown) => {
        release();
        throw e;
      });
    } catch (e) {
      throw new RolloutCancelledError(spec.ref, signal.reason ?? e);
    }
    try {
      return await this.attempt(spec, signal, options);
    } finally {
      release();
    }
  }

  private async attempt(spec: RolloutSpec, signal: AbortSignal, options: RunOptions): Promise<RunnerResult> {
    const { namespace } = this.cfg;
    const name = jobName(spec.ref);
    const started = performance.now();
    let nonce = newNonce();
    const finish = async (v: KubeVerdict, pods: V1Pod[]): Promise<RunnerResult> => {
      const log = await this.fetchLog(pods);
      let { detail, outcome, exitCode } = v;
      let signal: string | null = null;
      let outputText: string | null = null;
      let scoring: PodScoring | null = null;
      // A complete Job: the score step ended the pod and its log has the agent's status and output. (A failed agent
      // container means its wrapper itself was killed, the OOM killer's doing: classifyJob says so.)
      if (outcome === 'succeeded') {
        scoring = parseScoringLog(
          (await this.fetchLog(pods, SCORE_CONTAINER, this.cfg.scoreLogLimitBytes)).toString('utf8'),
          spec,
          nonce,
        );
        if (!scoring)
          [outcome, exitCode, detail] = [
            'infra_failed',
            null,
            `the pod's score step did not report (${detail ?? outcome})`,
          ];
        else {
          outputText = scoring.outputText;
          ({ outcome, exitCode, signal, detail } = reportedOutcome(scoring, spec.timeoutMs));
        }
      }
      if (v.preparing)
        detail = `${detail ?? ''}: ${(await this.fetchLog(pods, PREPARE_CONTAINER)).toString('utf8').trim().slice(-500)}`;
      try {
        await uploadLogs(this.logs, spec.ref, log, Buffer.alloc(0));
      } catch (e) {
        [outcome, detail] = ['infra_failed', `log upload failed: ${(e as Error).message}`];
      }
      const result: RunnerResult = {
        ref: spec.ref,
        taskId: spec.taskId,
        groupId: spec.groupId,
        mode: spec.mode,
        outcome,
        exitCode,
        signal,
        durationMs: Math.round(performance.now() - started),
        outputText,
        stdoutKey: keys.rolloutLog(spec.ref, 'stdout'),
        stderrKey: keys.rolloutLog(spec.ref, 'stderr'),
        detail,
        workdir: null,
        sandbox: 'kubernetes',
      };
      // The checks ran in the pod; the reward parts read their results as if they ran them now.
      if (scoring && outcome !== 'infra_failed') {
        // The hashes the pod took before the agent stand in for the host's snapshot of a local workdir.
        if (scoring.files) await options.filesBefore?.(scoring.files.before);
        await options.afterAgent?.(KUBE_WORKSPACE, result, podExec(scoring), scoring.files?.after);
      }
      return result;
    };

    try {
      await this.batch.createNamespacedJob({ namespace, body: buildRolloutJob(spec, this.cfg, nonce) });
    } catch (e) {
      // 409: this attempt's Job exists already (the activity was re-run); watch it instead of failing.
      if (!(e instanceof ApiException && e.code === 409)) {
        return finish({ outcome: 'infra_failed', exitCode: null, detail: apiError(`create Job ${name}`, e) }, []);
      }
    }

    const giveUpAt = started + jobDeadlineSec(spec) * 1000 + this.cfg.deadlineSlackMs;
    let apiErrors = 0;
    let pods: V1Pod[] = [];
    for (;;) {
      if (signal.aborted) {
        const failed = await this.deleteJob(name);
        throw new RolloutCancelledError(spec.ref, failed ? `${String(signal.reason)}; ${failed}` : signal.reason);
      }
      let verdict: KubeVerdict | null = null;
      try {
        const snapshot = await this.poller.next(name, signal);
        pods = snapshot.pods;
        apiErrors = 0;
        // A re-run of the activity found this attempt's Job: its scoring step carries that Job's nonce.
        nonce = snapshot.job?.metadata?.annotations?.[NONCE_ANNOTATION] ?? nonce;
        verdict = snapshot.job
          ? classifyJob(snapshot.job, pods)
          : { outcome: 'infra_failed', exitCode: null, detail: `Job ${name} disappeared before it finished` };
      } catch (e) {
        if (signal.aborted) continue;
        if (++apiErrors >= this.cfg.maxApiErrors) {
          verdict = { outcome: 'infra_failed', exitCode: null, detail: apiError(`watching Job ${name}`, e) };
        }
      }
      if (!verdict && performance.now() > giveUpAt) {
        verdict = {
          outcome: 'timed_out',
          exitCode: null,
          detail: `Job ${name} did not finish within its deadline of ${jobDeadlineSec(spec)} s + slack`,
        };
      }
      if (verdict) {
        // Stuck, timed-out or broken Jobs are removed now; finished ones stay for ttlSecondsAfterFinished.
        if (verdict.outcome === 'infra_failed' || verdict.outcome === 'timed_out') {
          const failed = await this.deleteJob(name);
          if (failed) verdict = { ...verdict, detail: `${verdict.detail ?? ''}; ${failed}` };
        }
        return finish(verdict, pods);
      }
    }
  }

  /** Delete the Job and, in the background, its pods; already gone is fine. Returns the error, if any. */
  private async deleteJob(name: string): Promise<string | null> {
    try {
      await this.batch.deleteNamespacedJob({ name, namespace: this.cfg.namespace, propagationPolicy: 'Background' });
      return null;
    } catch (e) {
      return e instanceof ApiException && e.code === 404 ? null : apiError(`delete Job ${name}`, e);
    }
  }

  /** The newest pod's agent log (stdout and stderr merged by Kubernetes), bounded; a note if unavailable. */
  private async fetchLog(
    pods: V1Pod[],
    container = AGENT_CONTAINER,
    limitBytes = this.cfg.logLimitBytes,
  ): Promise<Buffer> {
    const created = (p: V1Pod) => new Date(p.metadata?.creationTimestamp ?? 0).getTime();
    const pod = [...pods].sort((a, b) => created(b) - created(a))[0];
    if (!pod?.metadata?.name) return Buffer.from('[volt: no pod was created]\n');
    const read = { name: pod.metadata.name, namespace: this.cfg.namespace, container };
    try {
      const head = Buffer.from(await this.core.readNamespacedPodLog({ ...read, limitBytes }));
      if (head.length < limitBytes) return head;
      // Cut off: the end (where errors usually are) comes from a second, tail-only read, like the local runner's.
      const tail = Buffer.from(
        await this.core.readNamespacedPodLog({ ...read, tailLines: this.cfg.logTailLines, limitBytes }),
      );
      return Buffer.concat([
        head,
        Buffer.from(`\n[volt: log truncated after ${head.length} bytes; last ${this.cfg.logTailLines} lines follow]\n`),
        tail,
      ]);
    } catch (e) {
      return Buffer.from(`[volt: ${apiError(`log of pod ${pod.metadata.name}`, e)}]\n`);
    }
  }
}
