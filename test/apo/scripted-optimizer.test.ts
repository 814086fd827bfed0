import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { startScriptedOptimizer, type ScriptedOptimizer } from './scripted-optimizer.js';

describe('the scripted FAKE optimiser', () => {
  let fake: ScriptedOptimizer;
  let client: OpenAI;
  before(async () => {
    fake = await startScriptedOptimizer(['first answer', { status: 503 }], { apiKey: 'sk-test' });
    client = new OpenAI({ baseURL: fake.baseUrl, apiKey: 'sk-test', maxRetries: 0, timeout: 5_000 });
  });
  after(() => fake.close());

  it('answers a real OpenAI client with the scripted text, then the scripted failure, and records both', async () => {
    const ok = await client.chat.completions.create({
      model: 'critic',
      messages: [{ role: 'user', content: 'hi' }],
      temperature: 0.5,
    });
    assert.equal(ok.choices[0]?.message.content, 'first answer');
    await assert.rejects(
      client.chat.completions.create({ model: 'critic', messages: [{ role: 'user', content: 'again' }] }),
      (e: unknown) => e instanceof OpenAI.APIError && e.status === 503,
    );
    assert.deepEqual(
      fake.requests.map((r) => r.messages[0]?.content),
      ['hi', 'again'],
    );
    assert.deepEqual(fake.authHeaders, ['Bearer sk-test', 'Bearer sk-test']);
    assert.equal(fake.remaining(), 0);
  });

  it('rejects an invalid request with 400 in the OpenAI error shape, naming the field, without using an answer', async () => {
    fake.enqueue('kept for later');
    const res = await fetch(`${fake.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { authorization: 'Bearer sk-test', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'critic', messages: [{ role: 'oracle', content: 'x' }] }),
    });
    assert.equal(res.status, 400);
    const body = (await res.json()) as { error: { param: string; type: string } };
    assert.equal(body.error.type, 'invalid_request_error');
    assert.equal(body.error.param, 'messages.0.role');
    assert.equal(fake.remaining(), 1);
  });

  it('refuses a wrong API key with 401 and a missing answer with 500', async () => {
    const wrong = new OpenAI({ baseURL: fake.baseUrl, apiKey: 'sk-wrong', maxRetries: 0 });
    await assert.rejects(
      wrong.chat.completions.create({ model: 'critic', messages: [{ role: 'user', content: 'x' }] }),
      (e: unknown) => e instanceof OpenAI.APIError && e.status === 401,
    );
    await client.chat.completions.create({ model: 'critic', messages: [{ role: 'user', content: 'x' }] });
    await assert.rejects(
      client.chat.completions.create({ model: 'critic', messages: [{ role: 'user', content: 'x' }] }),
      /no answer left/,
    );
  });
});
