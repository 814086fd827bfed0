import { keys } from '../storage/keys.js';

/** The object-store URI of a checkpoint, as a worker with VOLT_ADAPTER_SOURCE=store sends it as `lora_path`. */
export const checkpointUri = (bucket: string, sha256: string) => `s3://${bucket}/${keys.checkpoint(sha256)}`;

/** The sha256 a checkpoint URI of `bucket` names, or null when `uri` is anything else. */
export function parseCheckpointUri(bucket: string, uri: string): string | null {
  const m = /^s3:\/\/([^/]+)\/checkpoints\/([0-9a-f]{64})\/?$/.exec(uri);
  return m && m[1] === bucket ? (m[2] as string) : null;
}
