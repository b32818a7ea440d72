/**
 * A short-phrase regression check for translation models (issue 12): phrases far shorter than the
 * training captions, where an over-fitted model pads its output with repeats ("A dog." →
 * "Ein Hund Hund mit einem Hund."). Each phrase lists words its translation must contain; the
 * check also fails a translation that repeats a content word or runs to more than twice the
 * phrase's length. The set is `data/short-phrases/en-de.tsv`.
 */

/** One test phrase and the words its translation must contain. */
export interface Phrase {
  /** The source-language phrase to translate. */
  source: string;
  /** Each group needs one of its alternatives, as a whole word, ignoring case. */
  required: string[][];
}

/** Words that may repeat in a correct translation (articles, prepositions, "und"). */
const MAY_REPEAT = new Set([
  'der',
  'die',
  'das',
  'den',
  'dem',
  'des',
  'ein',
  'eine',
  'einen',
  'einem',
  'einer',
  'eines',
  'und',
  'mit',
  'in',
  'im',
  'auf',
  'an',
  'am',
  'zu',
  'zum',
  'zur',
  'von',
  'vom',
]);

/** Parse the TSV: `phrase<TAB>group; group`, alternatives in a group split by `|`, `#` comments. */
export function parsePhrases(text: string, name = 'phrases'): Phrase[] {
  const out: Phrase[] = [];
  text.split(/\r?\n/).forEach((line, i) => {
    if (line.trim() === '' || line.startsWith('#')) return;
    const cols = line.split('\t');
    if (cols.length !== 2 || cols[0].trim() === '') {
      throw new Error(`${name}:${i + 1}: expected "phrase<TAB>required words", got ${JSON.stringify(line)}`);
    }
    const required = cols[1].split(';').map((g) =>
      g
        .split('|')
        .map((w) => w.trim())
        .filter((w) => w !== ''),
    );
    if (required.some((g) => g.length === 0))
      throw new Error(`${name}:${i + 1}: an empty group of required words in ${JSON.stringify(cols[1])}`);
    out.push({ source: cols[0].trim(), required });
  });
  return out;
}

const words = (s: string): string[] => s.toLowerCase().match(/\p{L}+/gu) ?? [];

/** What is wrong with `translation` of `phrase` (empty when it passes). */
export function checkPhrase(phrase: Phrase, translation: string): string[] {
  const problems: string[] = [];
  const ws = words(translation);
  const have = new Set(ws);
  for (const g of phrase.required) {
    if (!g.some((w) => have.has(w.toLowerCase()))) problems.push(`no ${g.join(' or ')}`);
  }
  const seen = new Set<string>();
  const repeated = new Set<string>();
  for (const w of ws) {
    if (seen.has(w) && !MAY_REPEAT.has(w)) repeated.add(w);
    seen.add(w);
  }
  if (repeated.size > 0) problems.push(`repeats ${[...repeated].join(', ')}`);
  const limit = 2 * words(phrase.source).length;
  if (ws.length > limit) problems.push(`${ws.length} words for a phrase of ${limit / 2}`);
  return problems;
}
