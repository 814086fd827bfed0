import { constants } from 'node:os';
import type { V1Job, V1Pod } from '@kubernetes/client-node';
import type { RolloutOutcome } from '../contracts/rollout.js';
import { AGENT_CONTAINER } from './kube-job.js';
import { PREPARE_CONTAINER } from './kube-scoring.js';

export interface KubeVerdict {
  outcome: RolloutOutcome;
  exitCode: number | null;
  detail: string | null;
  /** The pod's prepare step (the task's setup) failed: the agent never got a fair start. */
  preparing?: boolean;
}

/** Container states that never resolve by themselves: the image or the pod's config is broken, not the agent. */
const STUCK_WAITING = new Set([
  'ErrImagePull',
  'ImagePullBackOff',
  'InvalidImageName',
  'ErrImageNeverPull',
  'CreateContainerConfigError',
  'CreateContainerError',
]);
/** Pod-level reasons the cluster, not the agent, is to blame for. */
const INFRA_POD_REASONS = new Set([
  'Evicted',
  'NodeLost',
  'Preempting',
  'NodeShutdown',
  'Terminated',
  'UnexpectedAdmissionError',
  'OutOfcpu',
  'OutOfmemory',
]);

const condition = (job: V1Job, type: string) =>
  job.status?.conditions?.find((c) => c.type === type && c.status === 'True');
/** The agent's container status: an init container, the score step runs after it. */
const agentStatus = (pod: V1Pod) => pod.status?.initContainerStatuses?.find((c) => c.name === AGENT_CONTAINER);

/** Why the cluster failed a pod, if it did (eviction, lost node, preemption, broken image); else null. */
function infraFailure(pod: V1Pod): string | null {
  const name = pod.metadata?.name ?? '?';
  const waiting = agentStatus(pod)?.state?.waiting;
  if (waiting?.reason && STUCK_WAITING.has(waiting.reason))
    return `pod ${name}: ${waiting.reason}: ${waiting.message ?? ''}`.trim();
  const reason = pod.status?.reason;
  if (reason && INFRA_POD_REASONS.has(reason)) return `pod ${name}: ${reason}: ${pod.status?.message ?? ''}`.trim();
  if (pod.status?.phase === 'Unknown') return `pod ${name}: phase Unknown (node lost)`;
  const disruption = pod.status?.conditions?.find((c) => c.type === 'DisruptionTarget' && c.status === 'True');
  if (disruption) return `pod ${name}: disrupted: ${disruption.reason ?? ''} ${disruption.message ?? ''}`.trim();
  return null;
}

/**
 * The outcome of a rollout Job from its status and its pods, or null while it is still running.
 * Deadline wins over everything (the pod was killed for it); then completion; then the cluster's faults;
 * a failed Job with a non-zero agent exit is the agent's failure.
 */
export function classifyJob(job: V1Job, pods: V1Pod[]): KubeVerdict | null {
  const failed = condition(job, 'Failed') ?? condition(job, 'FailureTarget');
  if (failed?.reason === 'DeadlineExceeded') {
    return { outcome: 'timed_out', exitCode: null, detail: `Job deadline exceeded: ${failed.message ?? ''}`.trim() };
  }
  if (condition(job, 'Complete') ?? condition(job, 'SuccessCriteriaMet'))
    return { outcome: 'succeeded', exitCode: 0, detail: null };
  for (const pod of pods) {
    const why = infraFailure(pod);
    if (why) return { outcome: 'infra_failed', exitCode: null, detail: why };
  }
  if (!failed) return null;
  const prepare = pods
    .map((p) => p.status?.initContainerStatuses?.find((c) => c.name === PREPARE_CONTAINER)?.state?.terminated)
    .find((t) => t && t.exitCode !== 0);
  if (prepare)
    return {
      outcome: 'infra_failed',
      exitCode: null,
      detail: `the pod's prepare step (task setup) exited with ${prepare.exitCode}`,
      preparing: true,
    };
  // Only the Job's own Failed condition says why: a pod killed for the deadline also shows a non-zero exit.
  const terminated = pods.map((p) => agentStatus(p)?.state?.terminated).find((t) => t && t.exitCode !== 0);
  if (terminated) {
    const reason = terminated.reason && terminated.reason !== 'Error' ? ` (${terminated.reason})` : '';
    return {
      outcome: 'agent_failed',
      exitCode: terminated.exitCode,
      detail: `agent exited with ${terminated.exitCode}${reason}`,
    };
  }
  return {
    outcome: 'infra_failed',
    exitCode: null,
    detail: `Job failed without an agent exit: ${failed.reason ?? ''} ${failed.message ?? ''}`.trim(),
  };
}

/** A signal's name from a shell's exit status (128 + n), or null when the status is a plain exit. */
function signalOf(status: number): string | null {
  if (status <= 128) return null;
  return Object.entries(constants.signals).find(([, n]) => n === status - 128)?.[0] ?? null;
}

/**
 * The outcome from what the agent's wrapper reported through the score step, in the local runner's terms
 * (local-runner.ts): its timeout, a signal or an exit status, and the same details.
 */
export function reportedOutcome(
  report: { agentExit: number | null; timedOut: boolean },
  timeoutMs: number,
): KubeVerdict & { signal: string | null } {
  const { agentExit, timedOut } = report;
  if (agentExit === null)
    return {
      outcome: 'infra_failed',
      exitCode: null,
      signal: null,
      detail: "the agent's wrapper never ran the agent (see its log)",
    };
  const signal = signalOf(agentExit);
  if (timedOut)
    return {
      outcome: 'timed_out',
      exitCode: null,
      signal: signal ?? 'SIGTERM',
      detail: `timed out after ${timeoutMs} ms`,
    };
  if (agentExit === 0) return { outcome: 'succeeded', exitCode: 0, signal: null, detail: null };
  if (signal) return { outcome: 'agent_failed', exitCode: null, signal, detail: `agent killed by ${signal}` };
  return { outcome: 'agent_failed', exitCode: agentExit, signal: null, detail: `agent exited with ${agentExit}` };
}
