import { timingSafeEqual } from 'node:crypto';

/**
 * A check of `Authorization: Bearer <key>` against the keys given (null/undefined ones are skipped), in constant time
 * per key. With no key at all, everything passes: the route is open.
 */
export function bearerCheck(candidates: (string | null | undefined)[]): (authorization: string | undefined) => boolean {
  const expected = candidates.filter((k): k is string => !!k).map((k) => Buffer.from(k));
  if (expected.length === 0) return () => true;
  return (authorization) => {
    const given = Buffer.from(/^Bearer (.+)$/i.exec(authorization ?? '')?.[1] ?? '');
    return expected.some((key) => given.length === key.length && timingSafeEqual(given, key));
  };
}
