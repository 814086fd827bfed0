/* eslint-disable @typescript-eslint/no-explicit-any -- the engine's answer is JSON of any shape; only known fields are touched */
/**
 * The compact span form gateways stored before call records (call-records.ts); this module reads it. The engine's
 * answer (`response`) repeats what the span holds as `promptTokenIds` and `choices[i].tokenIds` / `logprobs` (vLLM's
 * `prompt_token_ids`, per-choice `token_ids`, each token's `logprob`, and each token's `bytes`, the UTF-8 of its
 * `token`), so such a span was stored with those copies removed and `elided` naming what was removed; reading puts
 * them back, so a reader sees the answer the engine sent. Spans without `elided` read unchanged. The writer of the
 * form is a test helper now (test/helpers/compact-spans.ts): no gateway writes it any more.
 */
export type ElidedPath =
  | 'prompt_token_ids'
  | `choices.${number}.prompt_token_ids`
  | `choices.${number}.token_ids`
  | `choices.${number}.logprobs.content.logprob`
  | `choices.${number}.logprobs.content.bytes`
  | `choices.${number}.logprobs.token_logprobs`;

const ELIDED =
  /^(?:prompt_token_ids|choices\.(\d+)\.(prompt_token_ids|token_ids|logprobs\.content\.logprob|logprobs\.content\.bytes|logprobs\.token_logprobs))$/;

/**
 * Puts back what `compactResponse` removed, in place, on a parsed stored record; returns the record without
 * `elided`. Throws with the bad path when `elided` does not fit the record (a corrupt or foreign object).
 */
export function restoreSpan(value: any): unknown {
  if (typeof value !== 'object' || value === null || !('elided' in value)) return value;
  const { elided, ...span } = value;
  if (!Array.isArray(elided)) throw new Error('elided: expected an array of paths');
  const response = span.response;
  if (elided.length > 0 && (typeof response !== 'object' || response === null))
    throw new Error('elided: the span has no response object');
  for (const path of elided) {
    const m = typeof path === 'string' ? ELIDED.exec(path) : null;
    if (!m) throw new Error(`elided: unknown path ${JSON.stringify(path)}`);
    if (!m[1]) {
      response.prompt_token_ids = span.promptTokenIds;
      continue;
    }
    const i = Number(m[1]);
    const choice = response?.choices?.[i];
    const mine = span.choices?.[i];
    if (!choice || !mine) throw new Error(`elided: ${path} names a choice the span does not have`);
    if (m[2] === 'prompt_token_ids') choice.prompt_token_ids = span.promptTokenIds;
    else if (m[2] === 'token_ids') choice.token_ids = mine.tokenIds;
    else if (m[2] === 'logprobs.token_logprobs') choice.logprobs.token_logprobs = mine.logprobs;
    else if (m[2] === 'logprobs.content.bytes') restoreBytes(choice, path);
    else {
      const content = choice.logprobs?.content;
      if (!Array.isArray(content) || !Array.isArray(mine.logprobs) || content.length !== mine.logprobs.length)
        throw new Error(`elided: ${path} does not match choices.${i}.logprobs`);
      // Back after `token`, where OpenAI and vLLM put it, so the object reads as the engine wrote it.
      choice.logprobs.content = content.map((t: any, k: number) =>
        'token' in t ? { token: t.token, logprob: mine.logprobs[k], ...t } : { ...t, logprob: mine.logprobs[k] },
      );
    }
  }
  return span;
}

// Back after `logprob`, where OpenAI and vLLM put it; runs after the logprob restore (elided lists it first).
function restoreBytes(choice: any, path: string): void {
  const content = choice.logprobs?.content;
  if (!Array.isArray(content) || !content.every((t: any) => typeof t?.token === 'string'))
    throw new Error(`elided: ${path} needs a token string in every entry`);
  choice.logprobs.content = content.map(({ token, logprob, ...rest }: any) => ({
    token,
    logprob,
    bytes: [...Buffer.from(token, 'utf8')],
    ...rest,
  }));
}
