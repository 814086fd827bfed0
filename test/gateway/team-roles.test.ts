import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { request } from 'undici';
import { buildBatch } from '../../src/batches/build-batch.js';
import { batchConfigSchema } from '../../src/batches/config.js';
import type { Span } from '../../src/contracts/span.js';
import { roleRoutes, teamConfigSchema } from '../../src/contracts/team.js';
import type { ObjectStore } from '../../src/storage/object-store.js';
import { readSpans } from '../../src/storage/spans.js';
import { rolloutResult } from '../batches/scored-rollouts.js';
import { makeCheckpoints } from '../helpers/lora-adapters.js';
import type { TestServices } from '../helpers/services.js';
import { rolloutInput, startGateway, startStore, type RunningGateway } from './harness.js';
import { MODEL_ADMIN_KEY, SERVED_MODEL, startModelServer } from './model-server.js';

// Agent roles on real parts: Volt's model server serving the base SmolLM2 and a real LoRA adapter (the trained
// role's policy), the gateway telling the roles apart from what the official SDKs send.
let services: TestServices, store: ObjectStore, gw: RunningGateway;
let server: Awaited<ReturnType<typeof startModelServer>>;
const POLICY = 'policy-solver';

before(async () => {
  ({ services, store } = await startStore());
  const dir = fs.mkdtempSync(path.join(services.dataDir, 'adapters-'));
  [server] = await Promise.all([startModelServer(), makeCheckpoints(store, dir, 1)]);
  const load = await request(`${server.url}/v1/load_lora_adapter`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${MODEL_ADMIN_KEY}` },
    body: JSON.stringify({ lora_name: POLICY, lora_path: path.join(dir, 'adapter-0') }),
  });
  assert.equal(load.statusCode, 200, await load.body.text());
  gw = await startGateway(store, services.dataDir, server.url);
});
after(async () => {
  await gw?.close();
  await server?.stop();
  await services?.stop();
});

// The run config's team, as an operator writes it: a solver asked by model name, a checker told by its system
// prompt, a reviewer by a header its harness sends.
const team = (unmatched: 'base' | 'refuse') =>
  teamConfigSchema.parse({
    roles: [
      { name: 'solver', match: { model: 'solver' }, policy: 'trained' },
      { name: 'checker', match: { system: '^You check' }, policy: 'base' },
      { name: 'reviewer', match: { header: { name: 'X-Agent-Role', value: '^review$' } }, policy: 'base' },
    ],
    unmatched,
  });
const registration = (unmatched: 'base' | 'refuse') => {
  const t = team(unmatched);
  return rolloutInput({
    policyModel: POLICY,
    team: {
      roles: roleRoutes(t, { name: POLICY, checkpointKey: null, sha256: null, iteration: null }, SERVED_MODEL),
      unmatched: unmatched === 'refuse' ? 'refuse' : { model: SERVED_MODEL },
    },
  });
};

const QUESTION = [{ role: 'user' as const, content: 'What is 2 + 3? Answer with the number.' }];
const greedy = { max_tokens: 8, temperature: 0, seed: 1 };

async function direct(model: string, messages: OpenAI.ChatCompletionMessageParam[]): Promise<number[]> {
  const res = await request(`${server.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages, ...greedy, return_token_ids: true }),
  });
  const json = (await res.body.json()) as { choices: { token_ids: number[] }[] };
  return json.choices[0]!.token_ids;
}

async function spansOf(input: ReturnType<typeof rolloutInput>): Promise<Span[]> {
  const spans: Span[] = [];
  for await (const s of readSpans(store, input)) spans.push(s);
  return spans.sort((a, b) => a.seq - b.seq);
}

void describe('agent roles (run config team) through the gateway', () => {
  void it('routes each call to its role’s policy, records the role, and trains only the trained role', async () => {
    const input = registration('base');
    const { token, baseUrl } = await gw.admin.register(input);
    const openai = new OpenAI({ baseURL: baseUrl, apiKey: token, maxRetries: 0 });
    const checkerMessages: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'system', content: 'You check answers. Reply yes or no.' },
      ...QUESTION,
    ];
    await openai.chat.completions.create({ model: 'solver', messages: QUESTION, ...greedy });
    await openai.chat.completions.create({ model: 'gpt-4o-mini', messages: checkerMessages, ...greedy });
    await openai.chat.completions.create(
      { model: 'gpt-4o-mini', messages: QUESTION, ...greedy },
      { headers: { 'X-Agent-Role': 'review' } },
    );
    // A call no role matches (an agent CLI's side call): served by the base model and recorded.
    await openai.chat.completions.create({ model: 'title-writer', messages: QUESTION, ...greedy });
    const models = await openai.models.list();
    assert.deepEqual(
      models.data.map((m) => m.id),
      [POLICY, 'solver'],
    );
    await gw.admin.close(token);

    const spans = await spansOf(input);
    assert.deepEqual(
      spans.map((s) => [s.role, s.servedBy.model]),
      [
        ['solver', POLICY],
        ['checker', SERVED_MODEL],
        ['reviewer', SERVED_MODEL],
        [null, SERVED_MODEL],
      ],
    );
    // Each went to the policy it names: the engine's tokens are those of that policy asked directly.
    assert.deepEqual(spans[0]!.choices[0]!.tokenIds, await direct(POLICY, QUESTION));
    assert.deepEqual(spans[1]!.choices[0]!.tokenIds, await direct(SERVED_MODEL, checkerMessages));
    assert.notDeepEqual(await direct(POLICY, QUESTION), await direct(SERVED_MODEL, QUESTION));

    // Only the trained role's call becomes a sample; the others are counted.
    // (one recorded rollout scored twice, as a group of two with a signal)
    const result = rolloutResult(input.runId, input.iteration, input.rolloutId, 'g0');
    const build = buildBatch(
      [
        { result, reward: 1 },
        { result, reward: 0 },
      ],
      () => spans,
      { ...batchConfigSchema.parse({ estimator: 'dr_grpo' }), trainedRoles: ['solver'] },
    );
    const rows = [];
    for await (const row of build.samples) rows.push(row);
    assert.deepEqual(
      rows.map((r) => r.span_ids),
      [[spans[0]!.spanId], [spans[0]!.spanId]],
    );
    assert.equal(build.manifest().drops.spans.excluded_role, 6);
  });

  void it('refuses a call no role matches when team.unmatched is "refuse", in the API the agent speaks', async () => {
    const input = registration('refuse');
    const { token, baseUrl } = await gw.admin.register(input);
    const openai = new OpenAI({ baseURL: baseUrl, apiKey: token, maxRetries: 0 });
    const refused = await openai.chat.completions.create({ model: 'title-writer', messages: QUESTION, ...greedy }).then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(refused instanceof OpenAI.BadRequestError, String(refused));
    assert.equal(refused.code, 'no_matching_role');
    assert.match(refused.message, /no role of this run matches this call \(model "title-writer"\)/);
    const anthropic = new Anthropic({ baseURL: baseUrl.replace(/\/v1$/, ''), apiKey: token, maxRetries: 0 });
    const refusedMessages = await anthropic.messages
      .create({ model: 'claude-haiku-4-5', max_tokens: 8, messages: QUESTION })
      .then(
        () => null,
        (e: unknown) => e,
      );
    assert.ok(refusedMessages instanceof Anthropic.BadRequestError, String(refusedMessages));
    assert.equal((refusedMessages.error as { type: string }).type, 'error');
    // The roles still work, and the refused calls were never made: one span.
    const ok = await anthropic.messages.create({
      model: 'solver',
      max_tokens: 8,
      messages: QUESTION,
    });
    assert.equal(ok.type, 'message');
    await gw.admin.close(token);
    const spans = await spansOf(input);
    assert.deepEqual(
      spans.map((s) => [s.role, s.api, s.servedBy.model]),
      [['solver', 'messages', POLICY]],
    );
  });
});
