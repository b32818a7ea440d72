/**
 * tokenizer.json post-processors against the real `tokenizers` library: for every kind qkv reads (null,
 * ByteLevel, TemplateProcessing in four shapes, BertProcessing, RobertaProcessing, Sequence), the ids, type ids and
 * special-tokens mask of one text and of a pair, with and without special tokens, as
 * scripts/fixtures/make_hf_post_processors.py recorded them from `Tokenizer.encode`.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import test from 'node:test';
import { bosEosPostProcessor, postProcessorFromJSON } from '../../src/text/post-processor.ts';

interface Run {
  texts: string[];
  alone: number[][];
  with: { ids: number[]; type_ids: number[]; special_tokens_mask: number[] };
  without: { ids: number[]; type_ids: number[]; special_tokens_mask: number[] };
}
const fixture = JSON.parse(
  readFileSync(new URL('../fixtures/hf-post-processors/cases.json', import.meta.url), 'utf8'),
) as { cases: { name: string; post_processor: unknown; runs: Run[] }[] };

test('the fixture covers every kind qkv reads', () => {
  const kinds = new Set(fixture.cases.map((c) => postProcessorFromJSON(c.post_processor).kind));
  for (const k of ['none', 'ByteLevel', 'TemplateProcessing', 'BertProcessing', 'RobertaProcessing'])
    assert.ok(kinds.has(k), k);
  assert.ok([...kinds].some((k) => k.startsWith('Sequence(')));
});

for (const c of fixture.cases) {
  test(`post-processor ${c.name}: the ids, type ids and special mask of tokenizers' encode`, () => {
    const pp = postProcessorFromJSON(c.post_processor);
    for (const r of c.runs) {
      const [a, b] = r.alone;
      for (const special of [true, false]) {
        const want = special ? r.with : r.without;
        const got = pp.process(a, b, special);
        const what = `${JSON.stringify(r.texts)} ${special ? 'with' : 'without'} special tokens`;
        assert.deepEqual(got.ids, want.ids, `ids, ${what}`);
        assert.deepEqual(got.typeIds, want.type_ids, `type ids, ${what}`);
        assert.deepEqual(got.specialTokensMask, want.special_tokens_mask, `special mask, ${what}`);
      }
      const added = r.with.ids.length - r.without.ids.length;
      assert.equal(pp.addedTokens(b !== undefined), added, `addedTokens, ${JSON.stringify(r.texts)}`);
    }
  });
}

test('bosEosPostProcessor: the template transformers 5 builds from add_bos_token/add_eos_token', () => {
  // Equal to the fixture's `template-bos-eos` (<s>:0 $A:0 </s>:0, pair with <s>:1 $B:1 </s>:1).
  const c = fixture.cases.find((x) => x.name === 'template-bos-eos')!;
  const bos = (c.post_processor as { special_tokens: Record<string, { ids: number[] }> }).special_tokens['<s>'].ids[0];
  const eos = (c.post_processor as { special_tokens: Record<string, { ids: number[] }> }).special_tokens['</s>'].ids[0];
  const pp = bosEosPostProcessor(bos, eos);
  for (const r of c.runs) {
    const got = pp.process(r.alone[0], r.alone[1]);
    assert.deepEqual([got.ids, got.typeIds], [r.with.ids, r.with.type_ids]);
  }
  assert.deepEqual(bosEosPostProcessor(null, null).process([4, 5]).ids, [4, 5]);
  assert.deepEqual(bosEosPostProcessor(7, null).process([4, 5], [6]).ids, [7, 4, 5, 7, 6]);
});

test('post-processors qkv does not read, and malformed ones, are refused by name', () => {
  assert.throws(
    () => postProcessorFromJSON({ type: 'Whatever' }),
    /tokenizer\.json: post_processor: post-processor 'Whatever' is not supported \(qkv reads ByteLevel, TemplateProcessing/,
  );
  assert.throws(
    () =>
      postProcessorFromJSON({
        type: 'TemplateProcessing',
        single: [{ SpecialToken: { id: '[X]', type_id: 0 } }],
        pair: [],
        special_tokens: {},
      }),
    /post_processor\.single\[0\]: SpecialToken "\[X\]" is not a key of special_tokens/,
  );
  assert.throws(
    () => postProcessorFromJSON({ type: 'BertProcessing', cls: ['[CLS]'], sep: ['[SEP]', 3] }),
    /cls must be \[token, id\]/,
  );
  assert.throws(
    () =>
      postProcessorFromJSON({
        type: 'Sequence',
        processors: [
          { type: 'BertProcessing', cls: ['a', 1], sep: ['b', 2] },
          { type: 'RobertaProcessing', cls: ['a', 1], sep: ['b', 2] },
        ],
      }),
    /more than one processor that adds tokens \(BertProcessing, RobertaProcessing\)/,
  );
  assert.throws(() => postProcessorFromJSON('ByteLevel'), /post_processor: expected an object or null, got string/);
});
