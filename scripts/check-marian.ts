/**
 * qkv's MarianTokenizer on a real Marian (opus-mt) folder against the answers
 * scripts/fixtures/marian_reference.py wrote for it: source pieces, source and target ids, and decodings
 * with and without special tokens, each equal or the text is printed.
 *
 *   /usr/bin/python3 scripts/fixtures/marian_reference.py DIR /tmp/ref.json
 *   npx tsx scripts/check-marian.ts DIR /tmp/ref.json      (exit 1 on any difference)
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { MarianTokenizer } from '../src/text/marian-tokenizer.ts';

interface Case {
  text: string;
  sourcePieces: string[];
  source: number[];
  target: number[];
  decoded: string;
  decodedWithSpecials: string;
}

const [dir, refFile] = process.argv.slice(2);
if (!dir || !refFile) {
  console.error('usage: npx tsx scripts/check-marian.ts DIR REFERENCE.json');
  process.exit(2);
}
const read = (name: string): string | null => {
  try {
    return readFileSync(join(dir, name), 'utf8');
  } catch {
    return null;
  }
};
const tok = MarianTokenizer.fromFiles({
  sourceSpm: readFileSync(join(dir, 'source.spm')),
  targetSpm: readFileSync(join(dir, 'target.spm')),
  vocab: readFileSync(join(dir, 'vocab.json'), 'utf8'),
  tokenizerConfig: read('tokenizer_config.json'),
});
const cases = JSON.parse(readFileSync(refFile, 'utf8')) as Case[];
const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);
let wrong = 0;
let ids = 0;
for (const c of cases) {
  const source = tok.encode(c.text);
  const target = tok.encodeTarget(c.text);
  ids += source.length + target.length;
  const ok =
    same(tok.source.encodeAsPieces(c.text), c.sourcePieces) &&
    same(source, c.source) &&
    same(target, c.target) &&
    tok.decode(c.target) === c.decoded &&
    tok.decode(c.target, { skipSpecialTokens: false }) === c.decodedWithSpecials;
  if (!ok) {
    wrong++;
    console.error(`differs: ${JSON.stringify(c.text)}`);
  }
}
console.log(`check-marian: ${cases.length - wrong} of ${cases.length} texts equal (${ids} ids)`);
process.exit(wrong === 0 ? 0 : 1);
