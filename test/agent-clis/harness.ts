import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { buildBatch } from '../../src/batches/build-batch.js';
import { storeSpanSource } from '../../src/batches/batch-io.js';
import { batchConfigSchema } from '../../src/batches/config.js';
import type { RunnerResult } from '../../src/contracts/rollout.js';
import type { SampleRow } from '../../src/contracts/sample.js';
import type { Span } from '../../src/contracts/span.js';
import { LocalRunner } from '../../src/rollouts/local-runner.js';
import { objectStoreLogSink } from '../../src/rollouts/log-sink.js';
import type { ObjectStore } from '../../src/storage/object-store.js';
import { readSpans } from '../../src/storage/spans.js';
import { startGateway, startStore, type RunningGateway } from '../gateway/harness.js';
import { SERVED_MODEL, startModelServer } from '../gateway/model-server.js';

export const ROOT = path.resolve(import.meta.dirname, '../..');

/** Why a test of a real agent program cannot run (false: it can); setup installs every one of them. */
export function missing(program: string): string | false {
  return existsSync(program) ? false : `${path.relative(ROOT, program)} is not installed: run scripts/setup.sh`;
}

/** The real stack an agent CLI runs against: S3, SmolLM2 on CPU, the gateway, and the local runner's sandbox. */
export interface AgentCliStack {
  store: ObjectStore;
  gateway: RunningGateway;
  runner: LocalRunner;
  stop(): Promise<void>;
}

/** `engineUrl`: a model server already running (a scripted one); else the real SmolLM2 server is started. */
export async function startAgentCliStack(engineUrl?: string): Promise<AgentCliStack> {
  const [{ services, store }, model] = await Promise.all([
    startStore(),
    engineUrl ? null : startModelServer({ readyMs: 240_000 }),
  ]);
  const gateway = await startGateway(store, services.dataDir, engineUrl ?? model!.url);
  const runner = new LocalRunner({
    root: path.join(services.dataDir, 'rollouts'),
    logs: objectStoreLogSink(store),
    hide: [services.dataDir],
    concurrency: 1,
  });
  return {
    store,
    gateway,
    runner,
    async stop() {
      await runner.close();
      await gateway.close();
      await model?.stop();
      await services.stop();
    },
  };
}

export interface AgentRollout {
  result: RunnerResult;
  spans: Span[];
  stdout: string;
  stderr: string;
}

/**
 * One rollout as a training iteration runs it: registered at the gateway (the per-call cap as a run config's
 * `agent.budget.maxTokensPerCall`), the agent command in the local runner's bubblewrap sandbox with the rollout
 * contract's environment, the token closed, then the attempt's spans and logs read back from the object store.
 */
export async function runAgentRollout(
  stack: AgentCliStack,
  opts: {
    rolloutId: string;
    groupId: string;
    command: string[];
    taskInput: Record<string, unknown>;
    env?: Record<string, string>;
    maxTokensPerCall: number;
    timeoutMs: number;
    prepareWorkdir?: (workdir: string) => Promise<unknown>;
  },
): Promise<AgentRollout> {
  const ref = { runId: 'agent-clis', iteration: 0, rolloutId: opts.rolloutId, attempt: 0 };
  const { token, baseUrl } = await stack.gateway.admin.register({
    ...ref,
    mode: 'train',
    policyModel: SERVED_MODEL,
    promptOverlay: null,
    budget: {
      maxModelCalls: null,
      maxCompletionTokens: null,
      maxWallSec: null,
      maxChoicesPerCall: 1,
      maxTokensPerCall: opts.maxTokensPerCall,
    },
  });
  const result = await stack.runner.run(
    {
      ref,
      taskId: `task-${opts.groupId}`,
      groupId: opts.groupId,
      mode: 'train',
      taskInput: opts.taskInput,
      agent: { command: opts.command },
      gateway: { baseUrl, token },
      timeoutMs: opts.timeoutMs,
      env: opts.env,
      sandbox: 'bubblewrap',
    },
    new AbortController().signal,
    { prepareWorkdir: opts.prepareWorkdir },
  );
  await stack.gateway.admin.close(token);
  const spans: Span[] = [];
  for await (const s of readSpans(stack.store, ref)) spans.push(s);
  const text = async (key: string) => (await stack.store.getBytes(key)).toString('utf8');
  return { result, spans, stdout: await text(result.stdoutKey), stderr: await text(result.stderrKey) };
}

/**
 * What every real agent's rollout must show: calls in the agent's API, none refused or failed by the gateway or the
 * engine, each with the engine's own prompt and completion token ids and a logprob per completion token.
 */
export function assertRecorded(run: AgentRollout, api: Span['api']): void {
  const log = `exit ${run.result.exitCode} (${run.result.outcome}: ${run.result.detail})\nstderr: ${run.stderr.slice(-3000)}`;
  assert.ok(run.spans.length >= 1, `no call recorded; ${log}`);
  const failed = run.spans.filter((s) => s.status !== 'ok');
  assert.deepEqual(
    failed.map((s) => `${s.seq}: ${s.error?.status} ${s.error?.message}`),
    [],
    `calls the gateway answered with an error; ${log}`,
  );
  for (const span of run.spans) {
    assert.equal(span.api, api);
    assert.equal(span.endpoint, 'chat.completions');
    const choice = span.choices[0]!;
    assert.ok(span.promptTokenIds!.length > 0, `span ${span.seq}: no prompt token ids`);
    assert.ok(choice.tokenIds!.length > 0, `span ${span.seq}: no completion token ids`);
    assert.equal(choice.logprobs!.length, choice.tokenIds!.length, `span ${span.seq}: a logprob per token`);
    assert.deepEqual(span.servedBy, { model: SERVED_MODEL, version: 'base' });
  }
}

/** One line per recorded call, for the test's diagnostics: what the agent sent and what the engine gave. */
export function describeCalls(run: AgentRollout): string[] {
  return run.spans.map((s) => {
    const body = s.request.body as { model?: string; messages?: unknown[]; input?: unknown[] };
    const turns = (body.messages ?? body.input ?? []).length;
    const c = s.choices[0];
    return `${run.result.ref.rolloutId} call ${s.seq}: model ${body.model}, ${turns} input items, prompt ${s.promptTokenIds?.length} tokens, answer ${c?.tokenIds?.length} tokens (${c?.finishReason}${c?.toolCalls?.length ? `, ${c.toolCalls.length} tool call(s)` : ''})`;
  });
}

/** A GRPO batch of one group built from the rollouts' stored spans, as the build-batch activity builds it. */
export async function batchOf(
  stack: AgentCliStack,
  rollouts: { run: AgentRollout; reward: number }[],
): Promise<{ rows: SampleRow[]; spanIds: Set<string> }> {
  const build = buildBatch(
    rollouts.map(({ run, reward }) => ({ result: run.result, reward })),
    storeSpanSource(stack.store),
    batchConfigSchema.parse({ minGroupSize: 2 }),
  );
  const rows: SampleRow[] = [];
  for await (const row of build.samples) rows.push(row);
  return { rows, spanIds: new Set(rows.flatMap((r) => r.span_ids)) };
}
