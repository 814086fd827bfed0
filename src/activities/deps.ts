import type { VoltEnv } from '../config/env.js';
import type { GatewayAdminClient } from '../gateway/admin-client.js';
import type { KubeRunnerConfigInput } from '../rollouts/kube-config.js';
import type { RolloutRunner } from '../rollouts/spec.js';
import type { ModelServerClient } from '../serving/model-server-client.js';
import type { ObjectStore } from '../storage/object-store.js';
import type { PinnedTaskSets } from '../tasks/pinned-task-sets.js';
import type { RolloutTraceExporter } from '../telemetry/rollout-traces.js';

/** Everything the activities touch, built once per worker process and passed in (no module singletons). */
export interface ActivityDeps {
  env: Readonly<VoltEnv>;
  store: ObjectStore;
  gateway: GatewayAdminClient;
  /** The embedded runner (local processes). */
  runner: RolloutRunner;
  /** Kubernetes Jobs runner for runs with rollouts.runner = 'kubernetes', built once per distinct Job config. */
  kubeRunner: (config: KubeRunnerConfigInput) => RolloutRunner;
  /** Task sets by hash (pinned when a run starts), so workers need no task files. */
  taskSets: PinnedTaskSets;
  /** Python interpreter with volt_trainer installed (VOLT_PYTHON, resolved). */
  python: string;
  /** The model server's one client (VOLT_MODEL_SERVER_URL, its admin key). */
  modelServer: ModelServerClient;
  /** Scored rollouts as OTLP traces (VOLT_OTLP_TRACES_URL); null: off. */
  traces?: RolloutTraceExporter | null;
}
