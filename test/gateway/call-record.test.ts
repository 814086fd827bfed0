import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import type { RolloutRef } from '../../src/contracts/rollout.js';
import { callRecordText, oneLine } from '../../src/gateway/recording/record-line.js';
import type { Rollout } from '../../src/gateway/registry/rollout-registry.js';
import { encodeSpanObject, UploadEncoder } from '../../src/gateway/recording/upload-encoder.js';
import { spanMeta, type CallContext } from '../../src/gateway/recording/call-context.js';
import { isCallRecord, spanOf } from '../../src/storage/call-records.js';
import { spanOfStoredLine } from '../../src/storage/spans.js';
import { sseBatches } from '../../src/gateway/upstream/sse.js';
import { StreamAssembler } from '../../src/storage/stream-assembler.js';
import { engineAnswer, recordedRollout } from './engine-spans.js';

const ref: RolloutRef = { runId: 'rec-run', iteration: 3, rolloutId: 'r-7', attempt: 1 };
const rollout = {
  record: { ...ref, mode: 'train', policyModel: 'policy', sampling: null, promptOverlay: { version: 4 } },
  ref,
} as unknown as Rollout;
const upstreamRequest = {
  model: 'policy',
  messages: [{ role: 'user', content: 'sum "1"\n and 2' }],
  return_token_ids: true,
  logprobs: true,
  stream: true,
};
const ctx = (stream: boolean): CallContext => ({
  rollout,
  seq: 5,
  endpoint: 'chat.completions',
  api: 'chat.completions',
  stream,
  startedAt: new Date(),
  startMs: performance.now(),
  request: {
    body: { model: 'gpt-4o-mini', messages: upstreamRequest.messages },
    headers: { authorization: '[redacted]' },
  },
  upstreamRequest,
  upstreamText: JSON.stringify(upstreamRequest),
  translation: [],
  role: null,
  model: 'policy',
});

/** SSE chunks of one streamed answer as an engine sends them: ids and logprobs per chunk, usage last. */
function engineChunks(): string[] {
  const head = {
    id: 'chatcmpl-s',
    created: 1_700_000_000,
    model: 'policy',
    system_fingerprint: 'policy@v4',
    object: 'chat.completion.chunk',
  };
  const chunks: unknown[] = [
    {
      ...head,
      prompt_token_ids: [11, 12, 13],
      choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }],
    },
  ];
  ['4', '2', '.'].forEach((t, i) =>
    chunks.push({
      ...head,
      choices: [
        {
          index: 0,
          delta: { content: t },
          logprobs: { content: [{ token: t, logprob: -0.25 * i, bytes: [...Buffer.from(t)], top_logprobs: [] }] },
          finish_reason: i === 2 ? 'stop' : null,
          stop_reason: i === 2 ? null : undefined,
          token_ids: [40 + i],
        },
      ],
    }),
  );
  chunks.push({ ...head, choices: [], usage: { prompt_tokens: 3, completion_tokens: 3, total_tokens: 6 } });
  return chunks.map((c) => JSON.stringify(c));
}

/** A span as it reads back from a stored line: JSON's own round trip (no undefined fields). */
const asRead = (span: unknown) => JSON.parse(JSON.stringify(span)) as unknown;

void describe('call records (the WAL and stored form of a call)', () => {
  void it('read back as the span the call path built', () => {
    const calls = recordedRollout(ref, { turns: 4, seed: 9, promptLen: 200, completionLen: 30 });
    for (const c of calls) {
      assert.ok(isCallRecord(c.record));
      assert.equal(c.record.includes('\n'), false, 'one WAL line');
      assert.deepEqual(spanOfStoredLine(c.record), asRead(c.span));
    }
  });

  void it('keep a pretty-printed answer on one line, and still read back as the span of what it parsed to', () => {
    const answer = engineAnswer([1, 2, 3], [7, 8], [-0.5, -1.25]);
    const pretty = JSON.stringify(answer, null, 2);
    const text = oneLine(pretty, JSON.parse(pretty));
    assert.equal(text, JSON.stringify(answer));
    assert.equal(
      oneLine(JSON.stringify(answer), answer),
      JSON.stringify(answer),
      'a one-line answer is kept as received',
    );
    const meta = spanMeta(ctx(false), new Date(), null);
    const record = callRecordText(meta, ctx(false).upstreamText, { json: text });
    assert.equal(record.includes('\n'), false);
    assert.deepEqual(spanOfStoredLine(record), asRead(spanOf(meta, upstreamRequest, answer)));
  });

  void it("splice in the agent's request text when it is one line, and read back the span as if it had been serialised", () => {
    const meta = spanMeta(ctx(false), new Date(), null);
    const answer = { json: JSON.stringify(engineAnswer([1, 2], [7], [-0.5])) };
    const serialised = spanOfStoredLine(callRecordText(meta, ctx(false).upstreamText, answer));
    const asSent = '{"model": "gpt-4o-mini",  "messages": [{"role": "user", "content": "sum \\"1\\"\\n and 2"}]}';
    assert.deepEqual(JSON.parse(asSent), meta.request.body, 'the fixture is the text of the same body');
    const spliced = callRecordText(meta, ctx(false).upstreamText, answer, asSent);
    assert.ok(spliced.includes(`"body":${asSent}`));
    assert.deepEqual(spanOfStoredLine(spliced), serialised);
    const pretty = JSON.stringify(meta.request.body, null, 2);
    const fallback = callRecordText(meta, ctx(false).upstreamText, answer, pretty);
    assert.equal(fallback.includes('\n'), false, 'a multi-line request is serialised again, the record stays one line');
    assert.deepEqual(spanOfStoredLine(fallback), serialised);
  });

  void it('of a stream assemble its chunks the way the call path did, ids and logprobs in order', () => {
    const chunks = engineChunks();
    const assembler = new StreamAssembler('chat.completions');
    for (const c of chunks) assembler.add(JSON.parse(c));
    const meta = spanMeta(ctx(true), new Date(), null);
    const span = spanOfStoredLine(callRecordText(meta, ctx(true).upstreamText, { chunks })) as {
      choices: { tokenIds: number[]; logprobs: number[]; text: string }[];
      promptTokenIds: number[];
      usage: unknown;
      promptOverlay: unknown;
    };
    assert.deepEqual(span, asRead(spanOf(meta, upstreamRequest, assembler.response())));
    assert.deepEqual(span.choices[0], {
      index: 0,
      tokenIds: [40, 41, 42],
      logprobs: [0, -0.25, -0.5],
      text: '42.',
      finishReason: 'stop',
    });
    assert.deepEqual(span.promptTokenIds, [11, 12, 13]);
    assert.deepEqual(span.usage, { prompt_tokens: 3, completion_tokens: 3, total_tokens: 6 });
    assert.deepEqual(span.promptOverlay, { version: 4 });
  });

  void it('of a failed call keep its error and a null answer', () => {
    const meta = spanMeta(ctx(false), null, { status: null, message: 'upstream unreachable: ECONNREFUSED' });
    const span = spanOfStoredLine(callRecordText(meta, ctx(false).upstreamText, { json: 'null' })) as Record<
      string,
      unknown
    >;
    assert.equal(span.status, 'error');
    assert.deepEqual(span.error, { status: null, message: 'upstream unreachable: ECONNREFUSED' });
    assert.equal(span.response, null);
    assert.deepEqual(span.choices, []);
  });

  void it('name what is wrong with a record that does not parse or has no meta', () => {
    assert.throws(() => spanOfStoredLine('{"callRecord":1,"meta":'), /JSON/);
    assert.throws(
      () => spanOfStoredLine('{"callRecord":1,"meta":null,"upstreamRequest":{}}'),
      /call record: expected an object with a meta object/,
    );
  });
});

void describe('span encoder', () => {
  const calls = recordedRollout(ref, { turns: 5, seed: 4, promptLen: 100, completionLen: 20 });
  const lines = calls.map((c) => `${c.record}\n`).join('');

  void it('stores the records as logged: the same brotli (or gzip) segment on its worker thread as on the event loop, and plain single records', async () => {
    const encoder = new UploadEncoder({ worker: true });
    const inline = new UploadEncoder({ worker: false });
    try {
      const job = { entries: calls.map((c) => ({ json: c.record })), segment: true, compression: 'brotli' as const };
      const [a, b] = await Promise.all([encoder.encode(job), inline.encode(job)]);
      assert.equal(a.contentType, 'application/x-brotli');
      assert.equal(brotliDecompressSync(a.body).toString(), lines);
      assert.equal(brotliDecompressSync(b.body).toString(), lines);
      assert.equal(a.spanBytes, Buffer.byteLength(lines) - calls.length);
      const gz = await Promise.all([
        encoder.encode({ ...job, compression: 'gzip' }),
        inline.encode({ ...job, compression: 'gzip' }),
      ]);
      assert.deepEqual(
        gz.map((g) => [g.contentType, gunzipSync(g.body).toString()]),
        [
          ['application/gzip', lines],
          ['application/gzip', lines],
        ],
      );
      const single = await encoder.encode({
        entries: [{ json: calls[0]!.record }],
        segment: false,
        compression: 'brotli',
      });
      assert.deepEqual([single.contentType, single.body.toString()], ['application/json', calls[0]!.record]);
      const plain = encodeSpanObject({
        entries: [{ json: calls[1]!.record }, { json: calls[2]!.record }],
        segment: true,
        compression: 'none',
      });
      assert.deepEqual(
        [plain.contentType, plain.body.toString()],
        ['application/x-ndjson', `${calls[1]!.record}\n${calls[2]!.record}\n`],
      );
    } finally {
      await encoder.close();
    }
  });

  void it('fails a job whose WAL entry cannot be read with a named error, and keeps working after', async () => {
    const encoder = new UploadEncoder({ worker: true });
    try {
      await assert.rejects(
        encoder.encode({
          entries: [{ file: '/nonexistent/volt-wal', offset: 0, bytes: 10 }],
          segment: true,
          compression: 'brotli',
        }),
        /span encoder: .*ENOENT/,
      );
      const ok = await encoder.encode({ entries: [{ json: calls[0]!.record }], segment: true, compression: 'none' });
      assert.equal(ok.body.toString(), `${calls[0]!.record}\n`);
    } finally {
      await encoder.close();
    }
  });
});

void describe('sseBatches', () => {
  void it('yields the events one read completed together, across split separators and CRLF', async () => {
    const reads = ['data: {"a":1}\n\ndata: {"a":2}\n\ndata: {"a"', ':3}\r\n\r\n: comment\n\ndata: [DONE]\n', '\n'];
    const got: string[][] = [];
    for await (const b of sseBatches(
      (async function* () {
        yield* reads.map((r) => Buffer.from(r));
      })(),
    ))
      got.push(b);
    assert.deepEqual(got, [['{"a":1}', '{"a":2}'], ['{"a":3}'], ['[DONE]']]);
  });

  void it('reads one-line events (the fast path) and multi-line ones alike', async () => {
    const text =
      'data:{"b":1}\n\nevent: x\ndata: {"b":2}\n\ndata: 1\ndata: 2\n\n: c\ndata: y\n\nid: 4\n\ndata:  two spaces\n\n';
    const got: string[] = [];
    for await (const b of sseBatches(
      (async function* () {
        yield Buffer.from(text);
      })(),
    ))
      got.push(...b);
    assert.deepEqual(got, ['{"b":1}', '{"b":2}', '1\n2', 'y', ' two spaces']);
  });
});
