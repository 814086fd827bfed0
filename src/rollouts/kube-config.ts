import { z } from 'zod';
import { parseFrozen } from '../config/errors.js';

const quantity = z.string().regex(/^[0-9]+(\.[0-9]+)?(m|Ki|Mi|Gi|Ti|k|M|G|T)?$/, 'not a Kubernetes quantity');
const resources = z.strictObject({ cpu: quantity, memory: quantity, 'ephemeral-storage': quantity.optional() });

/** How the Kubernetes runner creates rollout Jobs; parsed once with zod, frozen. */
export const kubeRunnerConfigSchema = z.strictObject({
  namespace: z
    .string()
    .regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, 'not a DNS-1123 label')
    .default('volt-rollouts'),
  /** The agent's image; the agent command runs in it unchanged. */
  image: z.string().min(1),
  imagePullPolicy: z.enum(['Always', 'IfNotPresent', 'Never']).default('IfNotPresent'),
  resources: z
    .strictObject({ requests: resources, limits: resources })
    .default({ requests: { cpu: '500m', memory: '512Mi' }, limits: { cpu: '1', memory: '1Gi' } }),
  /** The rollout pods' own UID/GID (must be non-zero: pods run as non-root). */
  runAsUser: z.number().int().min(1).default(65532),
  ttlSecondsAfterFinished: z.number().int().min(0).default(600),
  workspaceSizeLimit: quantity.default('1Gi'),
  pollIntervalMs: z.number().int().min(1).default(2000),
  /** Extra time past the Job's activeDeadlineSeconds before the runner gives up on the cluster itself. */
  deadlineSlackMs: z.number().int().min(0).default(60_000),
  /** Job creation rate limit (token bucket) shared by every rollout of this runner. */
  createsPerSecond: z.number().positive().default(5),
  createBurst: z.number().int().min(1).default(10),
  /** Most concurrent Jobs of this runner. */
  concurrency: z.number().int().min(1).default(64),
  /** Most bytes of the pod log's head fetched (Kubernetes merges stdout and stderr). */
  logLimitBytes: z
    .number()
    .int()
    .min(1)
    .default(128 * 1024),
  /** Most bytes of the scoring step's report read back (its checks' output and the workdir's file listing). */
  scoreLogLimitBytes: z
    .number()
    .int()
    .min(1)
    .default(4 * 1024 * 1024),
  /** The image's Python, for `{python}` in command checks and for sqlite_state. */
  python: z.string().min(1).default('python3'),
  /** Lines of the log's end kept too when it is longer than logLimitBytes. */
  logTailLines: z.number().int().min(1).default(500),
  /** Consecutive failed API calls while watching before the attempt counts as infra_failed. */
  maxApiErrors: z.number().int().min(1).default(5),
});

export type KubeRunnerConfigInput = z.input<typeof kubeRunnerConfigSchema>;
export type KubeRunnerConfig = z.output<typeof kubeRunnerConfigSchema>;

export const parseKubeRunnerConfig = (value: unknown): Readonly<KubeRunnerConfig> =>
  parseFrozen(kubeRunnerConfigSchema, value, 'kubernetes runner config');
