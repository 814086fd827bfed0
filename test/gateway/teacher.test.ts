import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import type { Span } from '../../src/contracts/span.js';
import { buildTrajectories } from '../../src/batches/trajectories.js';
import type { ObjectStore } from '../../src/storage/object-store.js';
import { readSpans } from '../../src/storage/spans.js';
import { makeCheckpoints } from '../helpers/lora-adapters.js';
import type { TestServices } from '../helpers/services.js';
import { rolloutInput, startGateway, startStore, type RunningGateway } from './harness.js';
import { MODEL_ADMIN_KEY, SERVED_MODEL, startModelServer } from './model-server.js';

// Distillation on real parts: the student is Volt's model server with the base SmolLM2; the teacher is a second model
// server process serving a real LoRA adapter (a different policy of the same base), reached as an OpenAI-compatible /v1.
let services: TestServices, store: ObjectStore, gw: RunningGateway;
let student: Awaited<ReturnType<typeof startModelServer>>, teacher: Awaited<ReturnType<typeof startModelServer>>;
const TEACHER_MODEL = 'teacher-adapter';

before(async () => {
  ({ services, store } = await startStore());
  const dir = fs.mkdtempSync(path.join(services.dataDir, 'adapters-'));
  [student, teacher] = await Promise.all([startModelServer(), startModelServer(), makeCheckpoints(store, dir, 1)]);
  const load = await request(`${teacher.url}/v1/load_lora_adapter`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${MODEL_ADMIN_KEY}` },
    body: JSON.stringify({ lora_name: TEACHER_MODEL, lora_path: path.join(dir, 'adapter-0') }),
  });
  assert.equal(load.statusCode, 200, await load.body.text());
  gw = await startGateway(store, services.dataDir, student.url, { env: { VOLT_TEACHER_API_KEY: 'sk-teacher' } });
});
after(async () => {
  await gw?.close();
  await Promise.all([student?.stop(), teacher?.stop()]);
  await services?.stop();
});

const MESSAGES = [
  { role: 'system', content: 'You answer in one short sentence.' },
  { role: 'user', content: 'What colour is the sky on a clear day?' },
];
const BODY = { model: 'gpt-4o', messages: MESSAGES, max_tokens: 24, temperature: 0 };

async function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await request(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.statusCode, text: await res.body.text() };
}

/** One call in a fresh rollout that `teacher` serves; its answer, the close result and the spans. */
async function teacherCall(body: unknown, teacherRef: { baseUrl: string; model: string; apiKeyEnv: string }) {
  const input = rolloutInput({ policyModel: SERVED_MODEL, teacher: teacherRef });
  const { token } = await gw.admin.register(input);
  const res = await post(`${gw.url}/r/${token}/v1/chat/completions`, body, { authorization: `Bearer ${token}` });
  const closed = await gw.admin.close(token);
  const spans: Span[] = [];
  for await (const s of readSpans(store, input)) spans.push(s);
  return { ...res, closed, spans };
}

const teacherRef = () => ({ baseUrl: `${teacher.url}/v1`, model: TEACHER_MODEL, apiKeyEnv: 'VOLT_TEACHER_API_KEY' });

async function studentTokens(body: object): Promise<number[]> {
  const r = await post(`${student.url}/tokenize`, { model: SERVED_MODEL, ...body });
  assert.equal(r.status, 200, r.text);
  return (JSON.parse(r.text) as { tokens: number[] }).tokens;
}

void describe('a teacher serves a rollout through the gateway (distillation)', () => {
  void it("answers as the teacher does, and the span holds the answer in the student's tokens", async () => {
    const direct = JSON.parse(
      (await post(`${teacher.url}/v1/chat/completions`, { ...BODY, model: TEACHER_MODEL })).text,
    );
    const baseAnswer = JSON.parse(
      (await post(`${student.url}/v1/chat/completions`, { ...BODY, model: SERVED_MODEL })).text,
    );
    const teacherText: string = direct.choices[0].message.content;
    assert.notEqual(teacherText, baseAnswer.choices[0].message.content, 'the adapter must answer unlike the base');

    const r = await teacherCall(BODY, teacherRef());
    assert.equal(r.status, 200, r.text);
    const answer = JSON.parse(r.text);
    assert.equal(answer.choices[0].message.content, teacherText, 'greedy: the gateway relays the teacher');
    assert.equal(answer.choices[0].token_ids, undefined, 'no engine extension reaches the agent');
    assert.equal(r.closed.upstreamFailures, 0);

    const span = r.spans[0]!;
    assert.equal(span.tokens, 'student_tokenizer');
    const sent = span.upstreamRequest as Record<string, unknown>;
    assert.equal(sent.model, TEACHER_MODEL);
    assert.equal(sent.return_token_ids, undefined, "a teacher is asked without the engine's extensions");
    // The student's own rendering: the prompt with its generation prompt, then the answer as a closed assistant turn.
    const prompt = await studentTokens({ messages: MESSAGES, add_generation_prompt: true });
    const whole = await studentTokens({
      messages: [...MESSAGES, { role: 'assistant', content: teacherText }],
      add_generation_prompt: false,
    });
    assert.deepEqual(span.promptTokenIds, prompt);
    assert.deepEqual(span.choices[0]!.tokenIds, whole.slice(prompt.length));
    assert.equal(span.choices[0]!.logprobs, null, 'no logprob of a teacher is the policy’s');

    // Supervised batches take the span; a policy-gradient batch cannot (no policy logprobs).
    const sft = buildTrajectories([span], true);
    assert.equal(sft.trajectories.length, 1);
    assert.deepEqual(sft.trajectories[0]!.responseIds, whole.slice(prompt.length));
    assert.deepEqual(buildTrajectories([span], false).excluded, { error_span: 0, missing_token_ids: 1 });
  });

  void it('a streamed teacher answer is retokenized the same way', async () => {
    const r = await teacherCall({ ...BODY, stream: true }, teacherRef());
    assert.equal(r.status, 200, r.text);
    assert.match(r.text, /data: \[DONE\]/);
    const span = r.spans[0]!;
    assert.equal(span.status, 'ok');
    assert.equal(span.tokens, 'student_tokenizer');
    const text = span.choices[0]!.text;
    const prompt = await studentTokens({ messages: MESSAGES, add_generation_prompt: true });
    const whole = await studentTokens({
      messages: [...MESSAGES, { role: 'assistant', content: text }],
      add_generation_prompt: false,
    });
    assert.deepEqual(span.choices[0]!.tokenIds, whole.slice(prompt.length));
    assert.equal(r.closed.upstreamFailures, 0);
  });

  void it('a teacher that fails makes the attempt an infra failure, never an answer to train on', async () => {
    // An unknown model (the teacher answers 404) and a teacher that refuses the request (400): neither is the agent's.
    for (const model of ['no-such-model', TEACHER_MODEL]) {
      const body = model === TEACHER_MODEL ? { ...BODY, temperature: 7 } : BODY;
      const r = await teacherCall(body, { ...teacherRef(), model });
      assert.ok(r.status >= 400, r.text);
      assert.ok(r.closed.upstreamFailures >= 1, `${model}: ${JSON.stringify(r.closed)}`);
      assert.equal(r.spans[0]!.status, 'error');
    }
    // A teacher nobody listens on.
    const down = await teacherCall(BODY, { ...teacherRef(), baseUrl: 'http://127.0.0.1:9/v1' });
    assert.equal(down.status, 502, down.text);
    assert.ok(down.closed.upstreamFailures >= 1);
  });
});
