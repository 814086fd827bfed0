/**
 * Object-store throughput against a real `rclone serve s3` on loopback, Volt's ObjectStore beside raw minio-js.
 *   node --import tsx bench/storage.ts [--small 200] [--mib 32] [--lines 50000] [--reps 3]
 * Small JSON: per-call latency medians. Large bytes: MiB/s (Buffer PUT vs spooled stream vs file).
 * JSONL: lines/s streamed (putJsonl/readJsonl) vs one JSON array in memory, with live-heap growth for each.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { parseArgs } from 'node:util';
import v8 from 'node:v8';
import vm from 'node:vm';
import { freePort } from '../src/stack/ports.js';
import { stopProcess } from '../src/stack/processes.js';
import { s3Client, startS3Server } from '../src/stack/s3.js';
import { createObjectStore } from '../src/storage/object-store.js';
import { z } from 'zod';

const { values } = parseArgs({
  options: {
    small: { type: 'string', default: '200' },
    mib: { type: 'string', default: '32' },
    lines: { type: 'string', default: '50000' },
    reps: { type: 'string', default: '3' },
  },
});
const SMALL = Math.min(Number(values.small), 5000);
const MIB = Math.min(Number(values.mib), 512);
const LINES = Math.min(Number(values.lines), 1_000_000);
const REPS = Math.min(Number(values.reps), 10);

v8.setFlagsFromString('--expose_gc');
const gc = vm.runInNewContext('gc') as () => void;
const live = () => {
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
};
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
const ms = async (fn: () => Promise<unknown>) => {
  const t = performance.now();
  await fn();
  return performance.now() - t;
};

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'volt-bench-storage-'));
const s3 = {
  endpoint: '',
  accessKey: 'volt-bench',
  secretKey: 'volt-bench-secret',
  bucket: 'volt-bench',
  region: 'us-east-1',
};
const record = await startS3Server({
  dataDir,
  host: '127.0.0.1',
  port: await freePort('127.0.0.1'),
  ...s3,
  detached: false,
});
s3.endpoint = record.address;
const store = createObjectStore({ ...s3, tmpDir: dataDir });
const raw = s3Client(s3);
const rows: string[][] = [];

try {
  // Small JSON objects: the span/result path.
  const doc = { spanId: 's', tokens: Array.from({ length: 256 }, (_, i) => i), text: 'x'.repeat(512) };
  const body = Buffer.from(JSON.stringify(doc));
  const lat = { volt: [] as number[], raw: [] as number[], voltGet: [] as number[], rawGet: [] as number[] };
  for (let i = 0; i < SMALL; i++) {
    lat.volt.push(await ms(() => store.putJson(`small/volt/${i}.json`, doc)));
    lat.raw.push(await ms(() => raw.putObject(s3.bucket, `small/raw/${i}.json`, body, body.length)));
    lat.voltGet.push(await ms(() => store.getJson(`small/volt/${i}.json`)));
    lat.rawGet.push(
      await ms(async () => {
        for await (const _ of await raw.getObject(s3.bucket, `small/raw/${i}.json`));
      }),
    );
  }
  const row = (name: string, a: number[], b: number[]) => [
    name,
    median(a).toFixed(2),
    median(b).toFixed(2),
    (median(a) / median(b)).toFixed(2),
  ];
  rows.push(['small JSON (1.6 KB), median ms', 'ObjectStore', 'raw minio', 'ratio']);
  rows.push(row('  put', lat.volt, lat.raw), row('  get', lat.voltGet, lat.rawGet));

  // Large bytes: checkpoint-sized uploads.
  const big = Buffer.alloc(MIB * 2 ** 20, 7);
  const file = path.join(dataDir, 'big.bin');
  fs.writeFileSync(file, big);
  const rate = (t: number) => (MIB / (t / 1000)).toFixed(1);
  const t = {
    buf: [] as number[],
    stream: [] as number[],
    file: [] as number[],
    get: [] as number[],
    rawBuf: [] as number[],
    rawGet: [] as number[],
  };
  for (let r = 0; r < REPS; r++) {
    t.rawBuf.push(await ms(() => raw.putObject(s3.bucket, 'big/raw.bin', big, big.length)));
    t.buf.push(await ms(() => store.putBytes('big/buf.bin', big)));
    t.stream.push(
      await ms(() =>
        store.putBytes(
          'big/stream.bin',
          Readable.from([big.subarray(0, big.length / 2), big.subarray(big.length / 2)]),
        ),
      ),
    );
    t.file.push(await ms(() => store.putFile('big/file.bin', file)));
    t.get.push(await ms(() => store.getFile('big/file.bin', path.join(dataDir, 'back.bin'))));
    t.rawGet.push(await ms(() => raw.fGetObject(s3.bucket, 'big/file.bin', path.join(dataDir, 'raw-back.bin'))));
  }
  rows.push([`${MIB} MiB bytes, median MiB/s`, 'ObjectStore', 'raw minio', 'ratio']);
  const vs = (name: string, xs: number[], base: number[]) => [
    name,
    rate(median(xs)),
    rate(median(base)),
    (median(base) / median(xs)).toFixed(2),
  ];
  rows.push(
    vs('  putBytes(Buffer) | putObject(Buffer)', t.buf, t.rawBuf),
    vs('  putBytes(stream, spooled)', t.stream, t.rawBuf),
  );
  rows.push(vs('  putFile (hash + PUT)', t.file, t.rawBuf), vs('  getFile | fGetObject', t.get, t.rawGet));

  // JSONL: batch files. Streamed both ways vs building one JSON array in memory.
  const item = (i: number) => ({ i, promptTokenIds: Array.from({ length: 64 }, (_, k) => k + i), advantage: 0.5 });
  const res = {
    stream: [] as number[],
    array: [] as number[],
    streamRead: [] as number[],
    arrayRead: [] as number[],
    memStream: 0,
    memArray: 0,
  };
  // rep -1 is untimed and samples live memory (gc() calls would distort the timed reps).
  for (let r = -1; r < REPS; r++) {
    const probe = r < 0;
    let base = probe ? live() : 0;
    const sample = (i: number, which: 'memStream' | 'memArray') => {
      if (probe && i % 10_000 === 0) res[which] = Math.max(res[which], live() - base);
    };
    const tw = await ms(() =>
      store.putJsonl(
        'jsonl/stream.jsonl',
        (function* () {
          for (let i = 0; i < LINES; i++) {
            sample(i, 'memStream');
            yield item(i);
          }
        })(),
      ),
    );
    const tr = await ms(async () => {
      let n = 0;
      for await (const _ of store.readJsonl('jsonl/stream.jsonl')) sample(++n, 'memStream');
    });
    if (probe) base = live();
    const aw = await ms(async () => {
      const all = Array.from({ length: LINES }, (_, i) => item(i));
      sample(0, 'memArray');
      await store.putJson('jsonl/array.json', all);
    });
    const ar = await ms(async () => {
      const all = await store.getJson('jsonl/array.json', z.array(z.unknown()));
      sample(0, 'memArray');
      return all.length;
    });
    if (!probe) {
      res.stream.push(tw);
      res.streamRead.push(tr);
      res.array.push(aw);
      res.arrayRead.push(ar);
    }
  }
  const lps = (xs: number[]) => Math.round(LINES / (median(xs) / 1000));
  rows.push([`${LINES} lines, median lines/s`, 'streamed JSONL', 'in-memory array', 'ratio']);
  rows.push([
    '  write',
    String(lps(res.stream)),
    String(lps(res.array)),
    (lps(res.stream) / lps(res.array)).toFixed(2),
  ]);
  rows.push([
    '  read',
    String(lps(res.streamRead)),
    String(lps(res.arrayRead)),
    (lps(res.streamRead) / lps(res.arrayRead)).toFixed(2),
  ]);
  rows.push([
    '  peak live-memory growth MiB',
    (res.memStream / 2 ** 20).toFixed(1),
    (res.memArray / 2 ** 20).toFixed(1),
    (res.memStream / res.memArray).toFixed(2),
  ]);
} finally {
  await stopProcess(record, 5_000);
  fs.rmSync(dataDir, { recursive: true, force: true });
}

const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => (r[c] ?? '').length)));
for (const r of rows)
  console.log(r.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]! + 2))).join(''));
