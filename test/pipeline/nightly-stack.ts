import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import { connectClient } from '../../src/client/connect.js';
import { deployAliasSchema } from '../../src/contracts/lineage.js';
import { rolloutOutcomeRecordSchema, type RolloutOutcomeRecord } from '../../src/contracts/rollout-outcome.js';
import { keys } from '../../src/storage/keys.js';
import { createObjectStore, type ObjectStore } from '../../src/storage/object-store.js';
import type { RunStatus } from '../../src/workflows/types.js';
import { voltInProcess } from '../cli/volt-cli.js';
import { startPipelineStack, type PipelineStack } from './harness.js';

const idsOf = (lines: string[]) => lines.map((l) => (JSON.parse(l) as { id: string }).id);

/** The nightly tests' set-up: the pipeline stack with one worker (all queues), S3, a Temporal client, and the lineage's schedule verbs. */
export interface NightlyStack {
  stack: PipelineStack;
  store: ObjectStore;
  client: Client;
  worker: ChildProcess;
  dir: string;
  cli(args: string[]): ReturnType<typeof voltInProcess>;
  /** `volt tasks add` of these JSONL lines; returns their task ids. */
  addTasks(name: string, lines: string[]): Promise<string[]>;
  trigger(): Promise<void>;
  actions(): Promise<Awaited<ReturnType<ReturnType<Client['schedule']['getHandle']>['describe']>>['info']>;
  /** The workflow id of the schedule's start after the first `before` ones. */
  nightStarted(before: number): Promise<string>;
  nightResult(before: number): Promise<{ workflowId: string; status: RunStatus }>;
  close(): Promise<void>;
}

export async function startNightlyStack(scheduleId: string, prefix: string): Promise<NightlyStack> {
  const stack = await startPipelineStack();
  await stack.startGateway();
  // Readiness budgets for a loaded machine: a worker start there can take minutes.
  const worker = await stack.startWorker('all', 600_000);
  const store = createObjectStore(stack.env);
  await store.ensureBucket();
  const { client, close } = await connectClient(stack.env);
  const dir = mkdtempSync(path.join(tmpdir(), 'volt-nightly-'));
  const cli = (args: string[]) => voltInProcess(args, stack.vars);
  const nightStarted = async (before: number) => {
    for (let t0 = Date.now(); Date.now() - t0 < 60_000; await sleep(250)) {
      const d = await client.schedule.getHandle(scheduleId).describe();
      if (d.info.recentActions.length > before) return d.info.recentActions.at(-1)!.action.workflow.workflowId;
    }
    throw new Error('the schedule started no run');
  };
  return {
    stack,
    store,
    client,
    worker,
    dir,
    cli,
    nightStarted,
    async addTasks(name, lines) {
      const file = path.join(dir, `${name}.jsonl`);
      writeFileSync(file, `${lines.join('\n')}\n`);
      const r = await cli(['tasks', 'add', file, '--prefix', prefix]);
      assert.equal(r.code, 0, r.stderr);
      return idsOf(lines);
    },
    async trigger() {
      assert.equal((await cli(['schedule', 'trigger', '--id', scheduleId])).code, 0);
    },
    actions: async () => (await client.schedule.getHandle(scheduleId).describe()).info,
    async nightResult(before) {
      const workflowId = await nightStarted(before);
      return { workflowId, status: (await client.workflow.getHandle(workflowId).result()) as RunStatus };
    },
    async close() {
      await close();
      await stack.stop();
    },
  };
}

/**
 * Polls, until stopped, what a deploy alias points at: the stored record and what the model server serves under the
 * alias (/v1/models gives each adapter's lora_path, which ends in the checkpoint's sha256). Every sha256 seen is kept.
 */
export function watchAlias(store: ObjectStore, modelUrl: string, alias: string) {
  const seen = { record: new Set<string>(), served: new Set<string>(), polls: 0 };
  let stopped = false;
  const poll = async () => {
    const record = await store.getJsonOrNull(keys.deployAlias(alias), deployAliasSchema).catch(() => null);
    if (record?.current?.policy.sha256) seen.record.add(record.current.policy.sha256);
    const models = await fetch(`${modelUrl}/v1/models`).then(
      (r) => r.json() as Promise<{ data: { id: string; root: string }[] }>,
      () => null,
    );
    const served = models?.data.find((m) => m.id === alias);
    if (served) seen.served.add(path.basename(served.root));
    seen.polls += 1;
  };
  const loop = (async () => {
    while (!stopped) {
      await poll();
      await sleep(500);
    }
  })();
  // One last poll after the run ended: a promotion in its final second (the record written, the server repointed
  // after the loop's last look) is still seen in the end state.
  return {
    seen,
    stop: async () => {
      stopped = true;
      await loop;
      await poll();
    },
  };
}

/** The outcome records of a run's training rollouts in iteration 0. */
export async function trainingOutcomes(store: ObjectStore, runId: string): Promise<RolloutOutcomeRecord[]> {
  const out: RolloutOutcomeRecord[] = [];
  for await (const o of store.list(`${keys.iteration(runId, 0)}rollouts/g`))
    if (o.key.endsWith('/outcome.json')) out.push(await store.getJson(o.key, rolloutOutcomeRecordSchema));
  return out;
}
