/**
 * SentencePiece's text normalization, as its `normalizer.cc` computes it, on UTF-8 bytes.
 *
 * A normalizer spec carries its rules compiled (`precompiled_charsmap`): a 4-byte little-endian
 * size, a darts-clone double-array trie of that many bytes whose keys are UTF-8 strings to replace,
 * and a blob of NUL-terminated replacement strings the trie's values point into. At each position
 * the longest key that matches wins (`NormalizePrefix`); a position no key matches keeps its one
 * UTF-8 character, and an invalid byte becomes U+FFFD. User-defined pieces are matched first and
 * kept verbatim (the processor's `PrefixMatcher`). Around that, `Normalize` drops leading spaces,
 * squeezes runs of spaces and drops trailing ones (`remove_extra_whitespaces`), adds the dummy `▁`
 * before (or, with `treat_whitespace_as_suffix`, after) the text, and writes spaces as `▁`.
 *
 * Everything works on bytes because sentencepiece does: tries are byte tries, and a charsmap key may
 * end inside what JavaScript would call a character.
 */
import type { SpmNormalizerSpec } from './sentencepiece-model.ts';

/** U+2581, the escaped space, in UTF-8. */
export const SPACE_SYMBOL = new Uint8Array([0xe2, 0x96, 0x81]);
const REPLACEMENT_CHAR = new Uint8Array([0xef, 0xbf, 0xbd]);

/** Length of the UTF-8 character a lead byte starts (sentencepiece's `OneCharLen`; 1 for a stray byte). */
export function oneCharLen(lead: number): number {
  return lead < 0xc0 ? 1 : lead < 0xe0 ? 2 : lead < 0xf0 ? 3 : 4;
}

/**
 * The byte length of the valid UTF-8 character at `pos`, or 0 when the bytes there are not one
 * (sentencepiece's `DecodeUTF8`: no overlong forms, no surrogates, nothing past U+10FFFF; a literal
 * U+FFFD counts as valid, as `IsValidDecodeUTF8` has it).
 */
export function validCharLen(b: Uint8Array, pos: number, end = b.length): number {
  const c0 = b[pos]!;
  const len = end - pos;
  const trail = (i: number): boolean => (b[pos + i]! & 0xc0) === 0x80;
  if (c0 < 0x80) return 1;
  if (len >= 2 && (c0 & 0xe0) === 0xc0) {
    const cp = ((c0 & 0x1f) << 6) | (b[pos + 1]! & 0x3f);
    return trail(1) && cp >= 0x80 ? 2 : 0;
  }
  if (len >= 3 && (c0 & 0xf0) === 0xe0) {
    const cp = ((c0 & 0x0f) << 12) | ((b[pos + 1]! & 0x3f) << 6) | (b[pos + 2]! & 0x3f);
    return trail(1) && trail(2) && cp >= 0x800 && (cp < 0xd800 || cp >= 0xe000) ? 3 : 0;
  }
  if (len >= 4 && (c0 & 0xf8) === 0xf0) {
    const cp = ((c0 & 0x07) << 18) | ((b[pos + 1]! & 0x3f) << 12) | ((b[pos + 2]! & 0x3f) << 6) | (b[pos + 3]! & 0x3f);
    return trail(1) && trail(2) && trail(3) && cp >= 0x10000 && cp <= 0x10ffff ? 4 : 0;
  }
  return 0;
}

/**
 * A trie over byte strings with an integer value per key. The children of all nodes live in one map
 * keyed by node × 256 + byte, which keeps a 60,000-piece vocabulary to a few hundred thousand entries.
 */
export class ByteTrie {
  private readonly children = new Map<number, number>();
  /** Value of each node, −1 where no key ends. Node 0 is the root. */
  private readonly values: number[] = [-1];

  /** Stores `value` under `key`; a key stored twice keeps its first value. */
  insert(key: Uint8Array, value: number): void {
    let node = 0;
    for (const byte of key) {
      let next = this.children.get(node * 256 + byte);
      if (next === undefined) {
        next = this.values.length;
        this.values.push(-1);
        this.children.set(node * 256 + byte, next);
      }
      node = next;
    }
    if (this.values[node] === -1) this.values[node] = value;
  }

  /** The node reached from `node` by `byte`, or −1. */
  step(node: number, byte: number): number {
    return this.children.get(node * 256 + byte) ?? -1;
  }

  /** The value stored at `node`, or −1. */
  value(node: number): number {
    return this.values[node]!;
  }

  /** Byte length of the longest key that starts `b` at `pos`, or 0. */
  longestPrefix(b: Uint8Array, pos: number): number {
    let node = 0;
    let longest = 0;
    for (let i = pos; i < b.length; i++) {
      node = this.step(node, b[i]!);
      if (node < 0) break;
      if (this.values[node]! >= 0) longest = i + 1 - pos;
    }
    return longest;
  }
}

/** The compiled rules of a charsmap: the double-array units and the replacement strings. */
interface Charsmap {
  units: Uint32Array;
  strings: Uint8Array;
}

function readCharsmap(blob: Uint8Array, name: string): Charsmap {
  const view = new DataView(blob.buffer, blob.byteOffset, blob.byteLength);
  const size = blob.length >= 4 ? view.getUint32(0, true) : -1;
  if (size < 0 || size + 4 > blob.length || size % 4 !== 0)
    throw new Error(
      `${name}: precompiled_charsmap is broken (a trie of ${size} bytes in a blob of ${blob.length}; ` +
        'expected a multiple of 4 that fits)',
    );
  const units = new Uint32Array(size / 4);
  for (let i = 0; i < units.length; i++) units[i] = view.getUint32(4 + 4 * i, true);
  return { units, strings: blob.subarray(4 + size) };
}

/**
 * The longest charsmap key starting `b` at `pos`, as darts-clone's `commonPrefixSearch` finds keys:
 * its length, with its value (an offset into the strings) left in `found.value`; 0 when none.
 */
function longestRule(units: Uint32Array, b: Uint8Array, pos: number, found: { value: number }): number {
  // A unit packs: bit 8 "has a leaf child", bits 0-7 (and 31) the label, bits 10-31 the offset to the
  // children (shifted by 8 more when bit 9 is set); a leaf unit holds the value in bits 0-30.
  let length = 0;
  let unit = units[0]!;
  let id = (unit >>> 10) << ((unit & 0x200) >>> 6);
  for (let i = pos; i < b.length; i++) {
    const c = b[i]!;
    id ^= c;
    if (id >= units.length) break;
    unit = units[id]!;
    if ((unit & 0x800000ff) >>> 0 !== c) break;
    id ^= (unit >>> 10) << ((unit & 0x200) >>> 6);
    if ((unit >>> 8) & 1) {
      length = i + 1 - pos;
      found.value = units[id]! & 0x7fffffff;
    }
  }
  return length;
}

/** Where the replacement of one prefix lies: bytes `start` to `end` of `source`. */
interface Span {
  source: Uint8Array;
  start: number;
  end: number;
}

/** SentencePiece's `Normalizer` for one spec. */
export class SpmNormalizer {
  private readonly charsmap: Charsmap | null;
  private readonly rule = { value: 0 };

  /**
   * `userDefined`: the user-defined pieces, kept verbatim; `name` starts error messages (the file).
   */
  constructor(
    readonly spec: SpmNormalizerSpec,
    private readonly treatWhitespaceAsSuffix = false,
    private readonly userDefined: ByteTrie | null = null,
    name = 'sentencepiece model',
  ) {
    this.charsmap = spec.precompiledCharsmap.length > 0 ? readCharsmap(spec.precompiledCharsmap, name) : null;
  }

  /**
   * What the text at `pos` normalizes to (written into `out`), and how many input bytes that consumes
   * (`NormalizePrefix`). One span object is reused across a text: this runs once per character.
   */
  normalizePrefix(b: Uint8Array, pos: number, out: Span): number {
    const user = this.userDefined?.longestPrefix(b, pos) ?? 0;
    if (user > 0) return set(out, b, pos, pos + user, user);
    if (this.charsmap) {
      const length = longestRule(this.charsmap.units, b, pos, this.rule);
      if (length > 0) {
        const s = this.charsmap.strings;
        let end = this.rule.value;
        while (end < s.length && s[end] !== 0) end++;
        return set(out, s, this.rule.value, end, length);
      }
    }
    const len = validCharLen(b, pos);
    return len === 0 ? set(out, REPLACEMENT_CHAR, 0, 3, 1) : set(out, b, pos, pos + len, len);
  }

  /** The normalized form of the UTF-8 text `input` (`Normalizer::Normalize`). */
  normalize(input: Uint8Array): Uint8Array {
    const { addDummyPrefix, removeExtraWhitespaces, escapeWhitespaces } = this.spec;
    const n = input.length;
    const span: Span = { source: input, start: 0, end: 0 };
    let pos = 0;
    if (removeExtraWhitespaces) {
      // Leading characters that normalize to exactly one space are dropped.
      while (pos < n) {
        const consumed = this.normalizePrefix(input, pos, span);
        if (span.end - span.start !== 1 || span.source[span.start] !== 0x20) break;
        pos += consumed;
      }
    }
    if (pos === n) return new Uint8Array(0);
    let out = new Uint8Array(n * 3 + 8);
    let size = 0;
    const push = (byte: number): void => {
      if (size === out.length) {
        const grown = new Uint8Array(out.length * 2);
        grown.set(out);
        out = grown;
      }
      out[size++] = byte;
    };
    const space = escapeWhitespaces ? SPACE_SYMBOL : new Uint8Array([0x20]);
    const addSpace = (): void => {
      for (const byte of space) push(byte);
    };
    if (!this.treatWhitespaceAsSuffix && addDummyPrefix) addSpace();
    let prevSpace = removeExtraWhitespaces;
    while (pos < n) {
      const consumed = this.normalizePrefix(input, pos, span);
      const { source, end } = span;
      let start = span.start;
      // After a space, the spaces that start the next replacement are dropped (runs squeeze to one).
      while (prevSpace && start < end && source[start] === 0x20) start++;
      if (start < end) {
        for (let i = start; i < end; i++) {
          if (source[i] === 0x20) addSpace();
          else push(source[i]!);
        }
        prevSpace = source[end - 1] === 0x20;
      }
      pos += consumed;
      if (!removeExtraWhitespaces) prevSpace = false;
    }
    if (removeExtraWhitespaces) {
      while (endsWith(out, size, space)) size -= space.length;
    }
    if (this.treatWhitespaceAsSuffix && addDummyPrefix) addSpace();
    return out.slice(0, size);
  }
}

function set(span: Span, source: Uint8Array, start: number, end: number, consumed: number): number {
  span.source = source;
  span.start = start;
  span.end = end;
  return consumed;
}

function endsWith(out: Uint8Array, size: number, tail: Uint8Array): boolean {
  if (size < tail.length) return false;
  for (let i = 0; i < tail.length; i++) if (out[size - tail.length + i] !== tail[i]) return false;
  return true;
}
