import { parentPort } from 'node:worker_threads';
import { AnswerCache } from './answer-cache.js';
import { checkAnswer } from './answer-check.js';
import type { Asked } from './extensions.js';
import { encodeSpanObjectYielding, type EncodeJob } from './span-encoder.js';

// The span encoder's worker thread (span-encoder.ts): answer checks and span jobs, answered by id.
const answers = new AnswerCache();
const keep = (text: string, parsed: unknown) => answers.keep(text, parsed);

type Message = { id: number } & ({ kind: 'check'; bytes: Uint8Array; asked: Asked } | { kind: 'encode'; job: EncodeJob });

parentPort!.on('message', (m: Message) => {
  const fail = (err: unknown) => parentPort!.postMessage({ id: m.id, error: err instanceof Error ? err.message : String(err) });
  try {
    if (m.kind === 'check') {
      parentPort!.postMessage({ id: m.id, checked: checkAnswer(m.bytes, m.asked, keep) });
      return;
    }
    encodeSpanObjectYielding(m.job, answers).then(({ body, contentType, spanChars }) => parentPort!.postMessage({ id: m.id, body, contentType, spanChars }), fail);
  } catch (err) {
    fail(err);
  }
});
parentPort!.postMessage({ id: -1, ready: true });
