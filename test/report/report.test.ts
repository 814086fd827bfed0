import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { keys } from '../../src/storage/keys.js';
import { createObjectStore, type ObjectStore } from '../../src/storage/object-store.js';
import type { ReportData } from '../../src/report/report-data.js';
import { readStoreData } from '../../src/report/store-data.js';
import { writeReport } from '../../src/report/write-report.js';
import { startTestServices, type TestServices } from '../helpers/services.js';
import { alias, baseEval, lastRewards, RUN_ID, spans, status, XSS } from './synthetic-run.js';
import { callRecordLine } from '../helpers/stored-spans.js';

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const python = path.resolve(import.meta.dirname, '../../.venv/bin/python');

// The object-store half of a report against a real S3 server (rclone), then the files on disk via real matplotlib.
describe('run report from a real object store', { timeout: 120_000 }, () => {
  let services: TestServices;
  let store: ObjectStore;
  let out: string;

  before(async () => {
    services = await startTestServices({ s3: true });
    store = createObjectStore(services.s3);
    await store.ensureBucket();
    await store.putJson(keys.evaluation(RUN_ID, 0, 'base'), baseEval);
    await store.putJson(keys.rewards(RUN_ID, 1), lastRewards);
    await store.putJson(keys.modelAlias(RUN_ID, 'best'), alias);
    for (const s of spans)
      await store.putBytes(
        keys.span({ runId: RUN_ID, iteration: 1, rolloutId: s.rolloutId, attempt: s.attempt }, s.seq),
        Buffer.from(callRecordLine(s)),
      );
    out = await mkdtemp(path.join(os.tmpdir(), 'volt-report-'));
  });
  after(async () => {
    await services?.stop();
    if (out) await rm(out, { recursive: true, force: true });
  });

  it('reads base score, promoted checkpoint and the best and worst rollouts with their spans', async () => {
    const got = await readStoreData(store, RUN_ID, 1);
    assert.equal(got.baseScore, 0.25);
    assert.deepEqual(got.promoted, alias.current);
    assert.equal(got.samples?.iteration, 1);
    const [best, worst] = got.samples!.rollouts;
    assert.deepEqual([best?.label, best?.rolloutId, best?.attempt, best?.reward], ['best', 'g0-r1', 1, 0.9]);
    assert.deepEqual([worst?.label, worst?.rolloutId, worst?.reward], ['worst', 'g0-r0', 0.2]);
    assert.deepEqual(
      best!.turns.map((t) => t.completion),
      ['Let me compute: CALC 6*7', 'ANSWER: 42'],
    );
    assert.equal(best!.turns[1]!.messages.length, 4);
    assert.equal(worst!.turns.length, 1);
  });

  it('is empty, not an error, for a run the store knows nothing about', async () => {
    const got = await readStoreData(store, 'other-run', 0);
    assert.deepEqual(got, { baseScore: null, promoted: null, samples: { iteration: 0, rollouts: [] } });
  });

  it('writes index.html and a real PNG curve, escaping what the agent said', async () => {
    const data: ReportData = {
      runId: RUN_ID,
      status,
      config: {
        model: 'smollm2-135m-instruct',
        iterations: 2,
        groupSize: 2,
        tasksPerIteration: 2,
        rewardKind: 'numeric_match',
        sandbox: 'bubblewrap',
      },
      timing: { state: 'COMPLETED', startedAt: '2026-11-30T10:00:00.000Z', closedAt: '2026-11-30T10:42:05.000Z' },
      ...(await readStoreData(store, RUN_ID, 1)),
      generatedAt: '2026-11-30T11:00:00.000Z',
    };
    const written = await writeReport(data, path.join(out, RUN_ID), python);
    assert.deepEqual(written, {
      html: path.join(out, RUN_ID, 'index.html'),
      png: path.join(out, RUN_ID, 'curve.png'),
      curveJson: path.join(out, RUN_ID, 'curve.json'),
      headline: ['held-out score, base → best: 0.250 → 0.500 (+25.0 points)'],
    });
    const png = await readFile(written.png);
    assert.deepEqual(png.subarray(0, 8), PNG_SIGNATURE);
    assert.ok(png.length > 10_000, `a drawn chart, not an empty image (${png.length} bytes)`);

    const html = await readFile(written.html, 'utf8');
    assert.ok(!html.includes(XSS), 'the agent message is not emitted as markup');
    assert.ok(html.includes('&lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt;'));
    assert.ok(html.includes('ANSWER: 41 &amp; &lt;b&gt;bold&lt;/b&gt;'));
    assert.ok(!/<(script|link)\b/i.test(html) && !/(src|href)="https?:/i.test(html), 'no external assets');
    assert.match(html, /<img src="curve\.png"/);
    assert.match(html, /\+25\.0 points/);
    assert.match(html, /42m 5s/);
    assert.ok(html.includes(alias.current.policy.sha256!));

    const curve = JSON.parse(await readFile(written.curveJson, 'utf8'));
    assert.deepEqual(curve.evalIterations, [0, 1, 2]);
    assert.deepEqual(curve.evalScores, [0.25, 0.5, 0.375]);
  });
});
