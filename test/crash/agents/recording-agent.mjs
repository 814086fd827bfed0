// A real agent for the crash matrix: CALLS streamed chat completions with the `openai` SDK, each HTTP request
// logged (token, request id, how it ended) to the ledger file named by argv[2], so a test can compare the spans
// Volt stored with the requests the agent actually sent. Its own retry loop (SDK retries off) gives every request
// its own id (header x-crash-request), so a span can be tied to exactly one request.
import { randomInt, randomUUID } from 'node:crypto';
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import OpenAI from 'openai';

const ledger = process.argv[2];
const calls = Number(process.argv[3] ?? 2);
const token = process.env.OPENAI_API_KEY;
const task = JSON.parse(process.env.VOLT_TASK ?? readFileSync(process.env.VOLT_TASK_FILE, 'utf8'));
// One write(2) per line with O_APPEND: concurrent agents never interleave within a line.
const log = (event, fields = {}) =>
  appendFileSync(ledger, `${JSON.stringify({ token, pid: process.pid, event, at: Date.now(), ...fields })}\n`);
const client = new OpenAI({ maxRetries: 0, timeout: 120_000 });

log('start');
const answers = [];
for (let call = 0; call < calls; call++) {
  // ignore_eos with a random length: every completion's token count differs, so groups have reward variance.
  const maxTokens = 4 + randomInt(9);
  for (let tries = 0; ; tries++) {
    const request = randomUUID();
    log('sent', { request, call });
    try {
      const stream = await client.chat.completions.create(
        {
          model: 'policy',
          messages: [{ role: 'user', content: `${task.input.question} Answer with a number only.` }],
          max_tokens: maxTokens,
          temperature: 1,
          stream: true,
          ignore_eos: true,
        },
        { headers: { 'x-crash-request': request } },
      );
      let text = '';
      let chunks = 0;
      for await (const chunk of stream) {
        if (chunks++ === 0) log('first_chunk', { request, call });
        text += chunk.choices[0]?.delta?.content ?? '';
      }
      log('answered', { request, call });
      answers.push(text);
      break;
    } catch (err) {
      log('broken', { request, call, error: String(err?.message ?? err).slice(0, 200) });
      if (tries >= 20) throw err; // ~50 s of retries: within agent.timeoutSec, longer than a restart
      await sleep(Math.min(250 * 2 ** tries, 3000));
    }
  }
}
const text = answers.at(-1) ?? '';
if (process.env.VOLT_OUTPUT_FILE) writeFileSync(process.env.VOLT_OUTPUT_FILE, text);
log('exit');
