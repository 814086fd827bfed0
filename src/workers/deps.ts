import path from 'node:path';
import type { ActivityDeps } from '../activities/deps.js';
import type { VoltEnv } from '../config/env.js';
import { GatewayAdminClient } from '../gateway/admin-client.js';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeRunner } from '../rollouts/kube-runner.js';
import { LiveGroups } from '../rollouts/live-groups.js';
import { LocalRunner } from '../rollouts/local-runner.js';
import { objectStoreLogSink } from '../rollouts/log-sink.js';
import { createObjectStore } from '../storage/object-store.js';
import { createModelServerClient } from '../serving/model-server-client.js';
import { PinnedTaskSets } from '../tasks/pinned-task-sets.js';
import { RolloutTraceExporter, rolloutTraceSettings } from '../telemetry/rollout-traces.js';

/** Build the clients every activity closes over, once per worker process. */
export async function buildActivityDeps(env: Readonly<VoltEnv>, cwd = process.cwd()): Promise<ActivityDeps> {
  const store = createObjectStore(env);
  await store.ensureBucket();
  const logs = objectStoreLogSink(store);
  const kubeRunners = new Map<string, KubeRunner>();
  const traceSettings = rolloutTraceSettings(env);
  return {
    env,
    store,
    gateway: new GatewayAdminClient(env.VOLT_GATEWAY_URL, env.VOLT_GATEWAY_ADMIN_KEY),
    // The per-run bound is rollouts.concurrency (enforced by the activity); this caps the whole worker.
    // The data dir (S3 files, gateway registry, credentials) is hidden from sandboxed agents.
    runner: new LocalRunner({
      root: path.join(env.dataDir, 'rollouts'),
      logs,
      concurrency: 64,
      hide: [env.dataDir],
      readOnly: [cwd],
      liveGroups: new LiveGroups(path.join(env.dataDir, 'live-agents')),
    }),
    kubeRunner: (config) => {
      const id = JSON.stringify(config);
      let runner = kubeRunners.get(id);
      if (!runner) {
        // In-cluster service account, or ~/.kube/config / KUBECONFIG outside a cluster.
        const kc = new KubeConfig();
        kc.loadFromDefault();
        runner = new KubeRunner(kc, config, logs);
        kubeRunners.set(id, runner);
      }
      return runner;
    },
    taskSets: new PinnedTaskSets(store, cwd),
    python: path.resolve(cwd, env.VOLT_PYTHON),
    modelServer: createModelServerClient({
      url: env.VOLT_MODEL_SERVER_CONTROL_URL ?? env.VOLT_MODEL_SERVER_URL,
      adminKey: env.VOLT_MODEL_SERVER_ADMIN_KEY,
    }),
    traces: traceSettings ? new RolloutTraceExporter(traceSettings) : null,
  };
}
