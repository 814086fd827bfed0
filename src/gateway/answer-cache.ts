/**
 * Answers the span encoder's thread has already parsed (answer-check.ts, for the call's path), kept until their call
 * record is built into a span, so the answer is parsed once per call instead of twice. A record is matched by its
 * tail: the answer's text exactly as it ends the record; anything else (evicted, re-serialised, replayed after a
 * restart) is parsed from the record as before. Bounded, oldest dropped first.
 */
export class AnswerCache {
  private readonly byLength = new Map<number, { text: string; parsed: unknown }[]>();
  private readonly order: { text: string; parsed: unknown }[] = [];
  private chars = 0;

  constructor(private readonly maxChars = 16 * 1024 * 1024) {}

  keep(text: string, parsed: unknown): void {
    const entry = { text, parsed };
    this.byLength.set(text.length, [...(this.byLength.get(text.length) ?? []), entry]);
    this.order.push(entry);
    this.chars += text.length;
    while (this.chars > this.maxChars && this.order.length) this.drop(this.order[0]!);
  }

  /** The record without its answer (`…,"response":null}`) and the answer parsed, when `record` ends with a kept one. */
  take(record: string): { head: string; response: unknown } | null {
    for (const [length, entries] of this.byLength) {
      const at = record.length - length - 1;
      if (at <= 0 || !record.endsWith('}') || !record.startsWith('"response":', at - 11)) continue;
      const entry = entries.find((e) => record.startsWith(e.text, at));
      if (!entry) continue;
      this.drop(entry);
      return { head: `${record.slice(0, at)}null}`, response: entry.parsed };
    }
    return null;
  }

  get size(): number {
    return this.order.length;
  }

  private drop(entry: { text: string; parsed: unknown }): void {
    const same = this.byLength.get(entry.text.length)!.filter((e) => e !== entry);
    if (same.length) this.byLength.set(entry.text.length, same);
    else this.byLength.delete(entry.text.length);
    this.order.splice(this.order.indexOf(entry), 1);
    this.chars -= entry.text.length;
  }
}
