import path from 'node:path';
import { ObjectStoreError } from './errors.js';
import { sha256Dir, sha256File, type DirEntry } from './hash.js';
import { assertKey, keys, UnsafeKeyError } from './keys.js';
import type { ObjectStore } from './object-store.js';
import { dirManifestSchema, type DirManifest } from '../contracts/policy.js';

export interface ContentAddressedDir {
  sha256: string;
  /** keys.checkpoint(sha256): the prefix the files live under. */
  prefix: string;
  files: DirEntry[];
  /** True when an identical directory was already stored and nothing was uploaded. */
  reused: boolean;
}

/** Upload a directory (e.g. a LoRA adapter) under keys.checkpoint(sha) where sha hashes its files' paths and bytes. */
export async function putDirContentAddressed(store: ObjectStore, dir: string): Promise<ContentAddressedDir> {
  const { sha256, files } = await sha256Dir(dir);
  if (files.length === 0) throw new ObjectStoreError(`putDirContentAddressed: ${dir} has no files`, null);
  const prefix = keys.checkpoint(sha256);
  const manifestKey = keys.checkpointManifest(sha256);
  if (await store.stat(manifestKey)) return { sha256, prefix, files, reused: true };
  for (const f of files) {
    const put = await store.putFile(assertKey(`${prefix}${f.path}`), path.join(dir, ...f.path.split('/')));
    if (put.sha256 !== f.sha256)
      throw new ObjectStoreError(`putDirContentAddressed: ${f.path} changed while uploading`, put.key);
  }
  await store.putJson(manifestKey, { sha256, files }, dirManifestSchema);
  return { sha256, prefix, files, reused: false };
}

/** Download every object under a prefix into a directory, keeping the relative layout. */
export async function getDir(
  store: ObjectStore,
  prefix: string,
  dir: string,
): Promise<{ files: { path: string; size: number }[] }> {
  assertKey(prefix, { prefix: true });
  if (!prefix.endsWith('/'))
    throw new ObjectStoreError(`getDir needs a prefix ending in '/', got ${JSON.stringify(prefix)}`, prefix);
  const root = path.resolve(dir);
  const files: { path: string; size: number }[] = [];
  for await (const o of store.list(prefix)) {
    const rel = o.key.slice(prefix.length);
    const target = path.resolve(root, ...rel.split('/'));
    // Keys come from the server; refuse any that would land outside the target directory.
    if (!target.startsWith(root + path.sep)) throw new UnsafeKeyError(o.key);
    files.push({ path: rel, size: (await store.getFile(o.key, target)).size });
  }
  return { files };
}

/** Download a content-addressed checkpoint and verify every file against its manifest. */
export async function getCheckpoint(store: ObjectStore, sha256: string, dir: string): Promise<DirManifest> {
  const manifest = await store.getJson(keys.checkpointManifest(sha256), dirManifestSchema);
  const prefix = keys.checkpoint(sha256);
  for (const f of manifest.files) {
    const target = path.join(path.resolve(dir), ...assertKey(f.path).split('/'));
    await store.getFile(`${prefix}${f.path}`, target);
    const got = await sha256File(target);
    if (got.sha256 !== f.sha256)
      throw new ObjectStoreError(
        `checkpoint ${sha256}: ${f.path} has sha256 ${got.sha256}, manifest says ${f.sha256}`,
        `${prefix}${f.path}`,
      );
  }
  return manifest;
}
