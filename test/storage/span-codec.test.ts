import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { utf8Bytes } from '../helpers/compact-spans.js';

const reference = (token: string, bytes: number[]) => Buffer.from(token, 'utf8').equals(Buffer.from(bytes));

void describe('utf8Bytes (which logprob entries may have their bytes elided)', () => {
  void it('agrees with Buffer.from on ASCII, 2-, 3- and 4-byte characters and lone surrogates', () => {
    const tokens = [
      '',
      'a',
      ' def',
      'é',
      'tëst',
      '€',
      '→ x',
      '😀',
      'a😀b',
      '\ud83d',
      '\ude00',
      'x\ud83d',
      '\ud83dx',
      '\ude00\ud83d',
      '\u07ff\u0800\uffff',
      '\u{10ffff}',
    ];
    for (const token of tokens) {
      const bytes = [...Buffer.from(token, 'utf8')];
      assert.equal(utf8Bytes({ token, bytes }), true, JSON.stringify(token));
      for (let k = 0; k < bytes.length; k++) {
        const wrong = [...bytes];
        wrong[k] = (wrong[k]! + 1) % 256;
        assert.equal(utf8Bytes({ token, bytes: wrong }), false, `${JSON.stringify(token)} byte ${k}`);
      }
      assert.equal(utf8Bytes({ token, bytes: [...bytes, 0x20] }), false, 'one byte too many');
      if (bytes.length) assert.equal(utf8Bytes({ token, bytes: bytes.slice(0, -1) }), false, 'one byte short');
    }
  });

  void it('agrees with Buffer.from on random strings of any code units, and refuses what is not a token with bytes', () => {
    let seed = 7;
    const rand = (n: number) => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) % n;
    for (let i = 0; i < 5_000; i++) {
      const token = String.fromCharCode(
        ...Array.from(
          { length: rand(6) },
          () => [rand(0x80), rand(0x800), rand(0x10000), 0xd800 + rand(0x800)][rand(4)]!,
        ),
      );
      const right = [...Buffer.from(token, 'utf8')];
      const other = rand(2) ? right : [...Buffer.from(token.split('').reverse().join(''), 'utf8')];
      assert.equal(utf8Bytes({ token, bytes: other }), reference(token, other), JSON.stringify(token));
    }
    // A token that splits a character keeps its bytes: they are not the UTF-8 of its text.
    assert.equal(utf8Bytes({ token: '\ufffd', bytes: [0xe2, 0x80] }), false);
    for (const t of [
      null,
      {},
      { token: 'a' },
      { token: 'a', bytes: 'a' },
      { token: 1, bytes: [49] },
      { token: 'a', bytes: ['97'] },
    ])
      assert.equal(utf8Bytes(t), false);
  });
});
