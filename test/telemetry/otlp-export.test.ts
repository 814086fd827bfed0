import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import type { Span } from '../../src/contracts/span.js';
import { readSpans } from '../../src/storage/spans.js';
import { createObjectStore, type ObjectStore } from '../../src/storage/object-store.js';
import { RolloutTraceExporter } from '../../src/telemetry/rollout-traces.js';
import { startGateway, rolloutInput, type RunningGateway } from '../gateway/harness.js';
import { SERVED_MODEL, startModelServer } from '../gateway/model-server.js';
import { startTestServices, type TestServices } from '../helpers/services.js';

const python = path.resolve(import.meta.dirname, '../../.venv/bin/python');

type Attr = { key: string; value: Record<string, unknown> };
type OtlpSpan = {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: string;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: Attr[];
  status?: { code?: string };
};
type Request = { resourceSpans: { resource: { attributes: Attr[] }; scopeSpans: { spans: OtlpSpan[] }[] }[] };

const attr = (s: { attributes: Attr[] }, key: string) => {
  const v = s.attributes.find((a) => a.key === key)?.value;
  if (!v) return undefined;
  if ('stringValue' in v) return v.stringValue;
  if ('intValue' in v) return Number(v.intValue);
  if ('doubleValue' in v) return v.doubleValue;
  if ('boolValue' in v) return v.boolValue;
  if ('arrayValue' in v)
    return ((v.arrayValue as { values?: { stringValue?: string }[] }).values ?? []).map((x) => x.stringValue);
  return v;
};

/**
 * A real rollout's spans (two chat calls through a real gateway to the real model server, stored in a real S3
 * server) exported over OTLP/HTTP by the official SDK into a FAKE collector that decodes them with the official
 * protobuf definitions (test/telemetry/otlp_receiver_fake.py): one trace, the GenAI attributes, parent and children.
 */
void describe('rollouts as OpenTelemetry traces (GenAI conventions) over OTLP', { timeout: 300_000 }, () => {
  let services: TestServices;
  let store: ObjectStore;
  let model: Awaited<ReturnType<typeof startModelServer>>;
  let gateway: RunningGateway;
  let receiver: ChildProcess;
  let receiverUrl: string;
  const received: Request[] = [];

  before(async () => {
    [services, model] = await Promise.all([startTestServices({ s3: true }), startModelServer()]);
    store = createObjectStore(services.s3);
    await store.ensureBucket();
    gateway = await startGateway(store, services.dataDir, model.url);
    receiver = spawn(python, [path.join(import.meta.dirname, 'otlp_receiver_fake.py')], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const lines = createInterface({ input: receiver.stdout! });
    receiverUrl = await new Promise<string>((resolve, reject) => {
      receiver.once('exit', (code) => reject(new Error(`the FAKE receiver exited ${code}`)));
      lines.on('line', (line) => {
        const port = /^port (\d+)$/.exec(line)?.[1];
        if (port) resolve(`http://127.0.0.1:${port}/v1/traces`);
        else received.push(JSON.parse(line) as Request);
      });
    });
  });
  after(async () => {
    receiver?.kill('SIGTERM');
    await gateway?.close();
    await Promise.all([model?.stop(), services?.stop()]);
  });

  void it('sends one trace per rollout: an invoke_agent root and a chat span per call, with the GenAI attributes', async () => {
    const reg = await gateway.admin.register(
      rolloutInput({ runId: 'run-otlp', iteration: 2, rolloutId: 'g0-r1', policyModel: SERVED_MODEL }),
    );
    for (const content of ['What is 2 + 3?', 'And 4 + 4?']) {
      const r = await fetch(`${reg.baseUrl}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${reg.token}` },
        body: JSON.stringify({
          model: 'gpt-4o-mini',
          messages: [{ role: 'user', content }],
          max_tokens: 12,
          temperature: 0.5,
        }),
      });
      assert.equal(r.status, 200, await r.clone().text());
    }
    await gateway.admin.close(reg.token);
    const spans: Span[] = [];
    for await (const s of readSpans(store, { runId: 'run-otlp', iteration: 2, rolloutId: 'g0-r1', attempt: 0 }))
      spans.push(s);
    assert.equal(spans.length, 2);

    const exporter = new RolloutTraceExporter({ url: receiverUrl, messages: true });
    exporter.export({
      runId: 'run-otlp',
      iteration: 2,
      mode: 'train',
      record: {
        rolloutId: 'g0-r1',
        attempt: 0,
        taskId: 'task-7',
        taskKind: 'plain',
        groupId: 'g0',
        outcome: 'succeeded',
        reward: 0.75,
        parts: {},
        flags: [],
        error: null,
      },
      spans,
    });
    await exporter.flush();
    for (let i = 0; i < 50 && received.length === 0; i++) await sleep(100);
    await exporter.shutdown();

    const all = received.flatMap((r) => r.resourceSpans);
    assert.ok(all.every((rs) => attr(rs.resource, 'service.name') === 'volt'));
    const otlp = all.flatMap((rs) => rs.scopeSpans.flatMap((s) => s.spans));
    assert.equal(otlp.length, 3, 'one root and two calls');
    const root = otlp.find((s) => !s.parentSpanId)!;
    const calls = otlp.filter((s) => s.parentSpanId);
    assert.equal(root.name, 'invoke_agent run-otlp');
    assert.equal(attr(root, 'gen_ai.operation.name'), 'invoke_agent');
    assert.equal(attr(root, 'volt.rollout_id'), 'g0-r1');
    assert.equal(attr(root, 'volt.reward'), 0.75);
    assert.ok(calls.every((c) => c.traceId === root.traceId && c.parentSpanId === root.spanId));
    assert.ok(calls.every((c) => c.kind === 'SPAN_KIND_CLIENT'));
    calls.sort((a, b) => Number(attr(a, 'volt.seq')) - Number(attr(b, 'volt.seq')));
    for (const [i, call] of calls.entries()) {
      const span = spans[i]!;
      assert.equal(call.name, 'chat gpt-4o-mini');
      assert.equal(attr(call, 'gen_ai.operation.name'), 'chat');
      assert.equal(attr(call, 'gen_ai.provider.name'), 'openai');
      assert.equal(attr(call, 'gen_ai.request.model'), 'gpt-4o-mini', 'the model the agent asked for');
      assert.equal(attr(call, 'gen_ai.request.max_tokens'), 12);
      assert.equal(attr(call, 'gen_ai.request.temperature'), 0.5);
      assert.equal(attr(call, 'gen_ai.usage.input_tokens'), span.usage!.prompt_tokens);
      assert.equal(attr(call, 'gen_ai.usage.output_tokens'), span.usage!.completion_tokens);
      assert.deepEqual(attr(call, 'gen_ai.response.finish_reasons'), [span.choices[0]!.finishReason]);
      assert.equal(attr(call, 'volt.span_id'), span.spanId);
      assert.equal(BigInt(call.startTimeUnixNano) / 1_000_000n, BigInt(Date.parse(span.startedAt)));
      assert.ok(BigInt(root.startTimeUnixNano) <= BigInt(call.startTimeUnixNano));
      assert.ok(BigInt(root.endTimeUnixNano) >= BigInt(call.endTimeUnixNano));
      const input = JSON.parse(String(attr(call, 'gen_ai.input.messages'))) as { parts: { content: string }[] }[];
      assert.equal(input.at(-1)?.parts[0]?.content, i === 0 ? 'What is 2 + 3?' : 'And 4 + 4?');
      const output = JSON.parse(String(attr(call, 'gen_ai.output.messages'))) as { parts: { content: string }[] }[];
      assert.equal(output[0]?.parts[0]?.content ?? '', span.choices[0]!.text ?? '');
    }

    // Messages stay in Volt unless asked for.
    received.length = 0;
    const quiet = new RolloutTraceExporter({ url: receiverUrl, messages: false });
    quiet.export({ runId: 'run-otlp', iteration: 2, mode: 'eval', record: { ...failedRecord() }, spans });
    await quiet.flush();
    for (let i = 0; i < 50 && received.length === 0; i++) await sleep(100);
    await quiet.shutdown();
    const quietSpans = received.flatMap((r) => r.resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((s) => s.spans)));
    assert.equal(quietSpans.length, 3);
    assert.ok(quietSpans.every((s) => attr(s, 'gen_ai.input.messages') === undefined));
  });
});

function failedRecord() {
  return {
    rolloutId: 'g0-r1',
    attempt: 0,
    taskId: 'task-7',
    taskKind: null,
    groupId: 'g0',
    outcome: 'agent_failed' as const,
    reward: 0,
    parts: {},
    flags: [],
    error: 'agent exited with 1',
  };
}
