import { createHash } from 'node:crypto';
import type { V1Container, V1EnvVar, V1Job, V1SecurityContext, V1Volume } from '@kubernetes/client-node';
import { contractEnv } from './agent-env.js';
import { KILL_GRACE_SEC, KUBE_HOME, STATUS_DIR, agentTimeoutSec, agentWrapper } from './kube-agent.js';
import type { KubeRunnerConfig } from './kube-config.js';
import { SNAPSHOT_DIR } from './kube-files.js';
import {
  HIDDEN_DIR,
  OUTPUT_DIR,
  OUTPUT_FILE,
  PREPARE_CONTAINER,
  SCORE_CONTAINER,
  hiddenAnnotation,
  prepareScript,
  preparesInPod,
  scoringScript,
} from './kube-scoring.js';
import { agentTaskJson, type RolloutSpec } from './spec.js';
import type { RolloutRef } from '../contracts/rollout.js';

export const AGENT_CONTAINER = 'agent';
export const JOB_NAME_LABEL = 'batch.kubernetes.io/job-name';
/** Selects every Job (and pod) the runner creates. */
export const MANAGED_BY_SELECTOR = 'app.kubernetes.io/managed-by=volt';
const TASK_ANNOTATION = 'volt.dev/task';
/** The score step's per-attempt marker nonce, on the Job (read back after a re-run finds the Job existing). */
export const NONCE_ANNOTATION = 'volt.dev/score-nonce';
const TASK_DIR = '/volt/task';
/** The agent's workdir in the pod (an emptyDir). */
export const KUBE_WORKSPACE = '/workspace';
const WORKSPACE = KUBE_WORKSPACE;
/** Seconds the pod's prepare step (the task's setup) may take, as the local runner's runTaskSetup. */
const SETUP_ALLOWANCE_SEC = 60;
/** Seconds the score step may take besides its checks' own timeouts (hidden files, output, listings). */
const SCORE_ALLOWANCE_SEC = 30;

/**
 * The Job's activeDeadlineSeconds: the agent's own timeout is enforced inside the pod (so a timed-out agent keeps its
 * output file, as on the local runner); the deadline is the backstop over setup, agent, kill grace and score step.
 */
export function jobDeadlineSec(spec: RolloutSpec): number {
  const checks = spec.scoringCommands.reduce((sum, c) => sum + Math.ceil(c.timeoutMs / 1000), 0);
  const setup = preparesInPod(spec) ? SETUP_ALLOWANCE_SEC : 0;
  return setup + agentTimeoutSec(spec) + KILL_GRACE_SEC + checks + SCORE_ALLOWANCE_SEC;
}

/** A DNS-1123 Job name from the ids; the hash keeps names distinct after lower-casing and truncation. */
export function jobName(ref: RolloutRef): string {
  const hash = createHash('sha256')
    .update(JSON.stringify([ref.runId, ref.iteration, ref.rolloutId, ref.attempt]))
    .digest('hex')
    .slice(0, 10);
  const readable = `volt-${ref.runId}-${ref.iteration}-${ref.rolloutId}-a${ref.attempt}`
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/-+/g, '-');
  return `${readable.slice(0, 63 - hash.length - 1).replace(/-+$/, '')}-${hash}`;
}

/** A label value (63 chars of [A-Za-z0-9_.-], alphanumeric at both ends) from an id; full ids go in annotations. */
const labelValue = (v: string | number) =>
  String(v)
    .slice(0, 63)
    .replace(/[^A-Za-z0-9]+$/, '');

/**
 * The Job of one rollout attempt: never retried by Kubernetes (Volt retries infra failures as new attempts),
 * bounded by activeDeadlineSeconds, non-root with no capabilities, no API token. The agent runs as an init container
 * with the local runner's contract (kube-agent.ts): only the allow-listed and the contract's env, a HOME of its own,
 * VOLT_OUTPUT_FILE, its limits and timeout; the score step after it reports its exit status and output file and runs
 * the reward's checks. The task reaches the agent as VOLT_TASK and, through a downward-API volume, VOLT_TASK_FILE.
 */
export function buildRolloutJob(spec: RolloutSpec, cfg: KubeRunnerConfig, nonce = ''): V1Job {
  const { ref } = spec;
  const name = jobName(ref);
  const labels = {
    'app.kubernetes.io/name': 'volt-rollout',
    'app.kubernetes.io/managed-by': 'volt',
    'volt.dev/run': labelValue(ref.runId),
    'volt.dev/iteration': labelValue(ref.iteration),
    'volt.dev/rollout': labelValue(ref.rolloutId),
    'volt.dev/attempt': labelValue(ref.attempt),
  };
  const annotations = {
    'volt.dev/ref': JSON.stringify(ref),
    'volt.dev/task-id': spec.taskId,
    'volt.dev/group-id': spec.groupId,
    'volt.dev/mode': spec.mode,
  };
  const contract = contractEnv(spec, { taskFile: `${TASK_DIR}/task.json`, outputFile: OUTPUT_FILE });
  // TMPDIR reaches the agent only through the allow-list, as the worker's does on the local runner.
  const env: V1EnvVar[] = Object.entries({ ...contract, HOME: KUBE_HOME, TMPDIR: '/tmp' }).map(([n, value]) => ({
    name: n,
    value,
  }));
  const containerSecurity: V1SecurityContext = {
    runAsNonRoot: true,
    runAsUser: cfg.runAsUser,
    runAsGroup: cfg.runAsUser,
    allowPrivilegeEscalation: false,
    readOnlyRootFilesystem: true,
    capabilities: { drop: ['ALL'] },
    seccompProfile: { type: 'RuntimeDefault' },
  };
  const agent: V1Container = {
    name: AGENT_CONTAINER,
    image: cfg.image,
    imagePullPolicy: cfg.imagePullPolicy,
    // An init container: the wrapper keeps the agent's status in a file, so the score step runs either way.
    command: agentWrapper(spec, [...Object.keys(contract), 'HOME']),
    workingDir: spec.agent.cwd ?? WORKSPACE,
    env,
    resources: { requests: { ...cfg.resources.requests }, limits: { ...cfg.resources.limits } },
    securityContext: containerSecurity,
    volumeMounts: [
      { name: 'workspace', mountPath: WORKSPACE },
      { name: 'home', mountPath: KUBE_HOME },
      { name: 'tmp', mountPath: '/tmp' },
      { name: 'task', mountPath: TASK_DIR, readOnly: true },
      { name: 'out', mountPath: OUTPUT_DIR },
      { name: 'status', mountPath: STATUS_DIR },
    ],
  };
  const hidden = Object.values(spec.hiddenFiles);
  const volumes: V1Volume[] = [
    { name: 'workspace', emptyDir: { sizeLimit: cfg.workspaceSizeLimit } },
    { name: 'home', emptyDir: { sizeLimit: cfg.workspaceSizeLimit } },
    { name: 'tmp', emptyDir: { sizeLimit: cfg.workspaceSizeLimit } },
    {
      name: 'task',
      downwardAPI: {
        items: [{ path: 'task.json', fieldRef: { fieldPath: `metadata.annotations['${TASK_ANNOTATION}']` } }],
      },
    },
    { name: 'out', emptyDir: { sizeLimit: '16Mi' } },
    { name: 'status', emptyDir: { sizeLimit: '1Mi' } },
    { name: 'score-tmp', emptyDir: { sizeLimit: cfg.workspaceSizeLimit } },
    // Mounted in the score container only: the agent's container never has the hidden files.
    {
      name: 'hidden',
      downwardAPI: {
        items: hidden.map((_, i) => ({
          path: `h${i}`,
          fieldRef: { fieldPath: `metadata.annotations['${hiddenAnnotation(i)}']` },
        })),
      },
    },
  ];
  // The prepare step's listing lives where the agent's container cannot reach it; the score step reads it.
  if (spec.reportFiles) volumes.push({ name: 'snap', emptyDir: { sizeLimit: '64Mi' } });
  const hiddenAnnotations = Object.fromEntries(hidden.map((text, i) => [hiddenAnnotation(i), text]));
  const first = preparesInPod(spec) ? [preparer(spec, cfg, containerSecurity)] : [];
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    // The nonce lives on the Job, which the agent cannot read (no API token), not on the pod template it runs from.
    metadata: {
      name,
      namespace: cfg.namespace,
      labels,
      annotations: { ...annotations, [NONCE_ANNOTATION]: nonce },
    },
    spec: {
      backoffLimit: 0,
      activeDeadlineSeconds: jobDeadlineSec(spec),
      ttlSecondsAfterFinished: cfg.ttlSecondsAfterFinished,
      template: {
        metadata: {
          labels,
          annotations: { ...annotations, [TASK_ANNOTATION]: agentTaskJson(spec), ...hiddenAnnotations },
        },
        spec: {
          restartPolicy: 'Never',
          automountServiceAccountToken: false,
          // Service links would put every Service's host/port of the namespace into the agent's env.
          enableServiceLinks: false,
          securityContext: {
            runAsNonRoot: true,
            runAsUser: cfg.runAsUser,
            runAsGroup: cfg.runAsUser,
            fsGroup: cfg.runAsUser,
            seccompProfile: { type: 'RuntimeDefault' },
          },
          initContainers: [...first, agent],
          containers: [scorer(spec, cfg, containerSecurity, nonce)],
          volumes,
        },
      },
    },
  };
}

/** The pod's prepare step: the agent's image and lock-down, the workdir and the listing volume, never the hidden files. */
function preparer(spec: RolloutSpec, cfg: KubeRunnerConfig, securityContext: V1SecurityContext): V1Container {
  return {
    name: PREPARE_CONTAINER,
    image: cfg.image,
    imagePullPolicy: cfg.imagePullPolicy,
    command: ['/bin/sh', '-c', prepareScript(spec)],
    workingDir: WORKSPACE,
    env: [
      { name: 'HOME', value: WORKSPACE },
      { name: 'TMPDIR', value: '/tmp' },
      { name: 'LANG', value: 'C.UTF-8' },
    ],
    resources: { requests: { ...cfg.resources.requests }, limits: { ...cfg.resources.limits } },
    securityContext,
    volumeMounts: [
      { name: 'workspace', mountPath: WORKSPACE },
      { name: 'tmp', mountPath: '/tmp' },
      ...(spec.reportFiles ? [{ name: 'snap', mountPath: SNAPSHOT_DIR }] : []),
    ],
  };
}

/** The pod's score step: the agent's image, the same lock-down, the workdir, the hidden files and the checks. */
function scorer(
  spec: RolloutSpec,
  cfg: KubeRunnerConfig,
  securityContext: V1SecurityContext,
  nonce: string,
): V1Container {
  return {
    name: SCORE_CONTAINER,
    image: cfg.image,
    imagePullPolicy: cfg.imagePullPolicy,
    command: ['/bin/sh', '-c', scoringScript(spec, nonce)],
    workingDir: WORKSPACE,
    env: [
      { name: 'HOME', value: WORKSPACE },
      { name: 'TMPDIR', value: '/tmp' },
      { name: 'LANG', value: 'C.UTF-8' },
    ],
    resources: { requests: { ...cfg.resources.requests }, limits: { ...cfg.resources.limits } },
    securityContext,
    volumeMounts: [
      { name: 'workspace', mountPath: WORKSPACE },
      { name: 'score-tmp', mountPath: '/tmp' },
      { name: 'out', mountPath: OUTPUT_DIR, readOnly: true },
      { name: 'status', mountPath: STATUS_DIR, readOnly: true },
      { name: 'hidden', mountPath: HIDDEN_DIR, readOnly: true },
      ...(spec.reportFiles ? [{ name: 'snap', mountPath: SNAPSHOT_DIR, readOnly: true }] : []),
    ],
  };
}
