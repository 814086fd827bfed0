import { parentPort } from 'node:worker_threads';
import { encodeSpanObject, type EncodeJob } from './upload-encoder.js';

// The span encoder's worker thread (upload-encoder.ts): one job at a time, answered by id.
parentPort!.on('message', ({ id, job }: { id: number; job: EncodeJob }) => {
  try {
    const { body, contentType, spanBytes } = encodeSpanObject(job);
    parentPort!.postMessage({ id, body, contentType, spanBytes });
  } catch (err) {
    parentPort!.postMessage({ id, error: err instanceof Error ? err.message : String(err) });
  }
});
