/**
 * The figures of a Markdown file's prose, for check-records' reverse check (issue 48, point 2): every
 * figure in README.md, docs/*.md and the model cards must be named by a claim in records/claims.json
 * (its `at` context in that file), stand in a generated block (checked for staleness on its own), or
 * be one of the few kinds of number below that are not measurements.
 *
 * The text is taken as one line (Markdown wraps anywhere); offsets are into that line. Not prose, so
 * not scanned: fenced and inline code (commands, identifiers, example output that the examples'
 * tests run) except the comments of shell blocks, link targets, HTML comments, `<!-- generated:NAME -->` blocks, and `<!-- no-file -->` blocks: a
 * list of figures that says of itself that they have no file behind them (docs/evidence.md's).
 *
 * A figure is a number written as a measurement: with a decimal point ("41.02", "0.76"), with a
 * unit after it ("4,173 MB", "3×", "40 minutes", "12%"), or after "BLEU" or "chrF". Any other integer
 * ("2 cores", "beam 4", "dModel 512", "8,000 steps", "2026-11-24", "issue 3") is a count, a dimension,
 * a setting, a date or an index, and is not scanned.
 */

/** The text as one line: Markdown wraps a figure and its words anywhere. */
export const oneLine = (s: string) => s.replace(/\s+/g, ' ');

/** Ranges of the one-line text that are not prose: [start, end) each. */
function notProse(text: string): [number, number][] {
  const ranges: [number, number][] = [];
  // Each kind is found in the text with the kinds before it blanked: a fence's backticks are not an
  // inline code span's, a comment inside code is code.
  let rest = text;
  const add = (re: RegExp) => {
    for (const m of rest.matchAll(re)) ranges.push([m.index, m.index + m[0].length]);
    rest = rest.replace(re, (m) => ' '.repeat(m.length));
  };
  add(/<!-- generated:([\w-]+) -->[\s\S]*?<!-- \/generated:\1 -->/g);
  // A table or list that says of itself that its figures have no file (docs/evidence.md's).
  add(/<!-- no-file -->[\s\S]*?<!-- \/no-file -->/g);
  add(/```[\s\S]*?```/g);
  add(/<!--[\s\S]*?-->/g);
  add(/``[^`]+``|`[^`]+`/g);
  add(/\]\([^)]*\)/g);
  add(/https?:\/\/\S+/g);
  return ranges;
}

/** A number written as a measurement (see the file's comment); `×` before a digit is a shape (4096×512), not a ratio. */
const FIGURE =
  /(?<![\w.,/@#-])(\d{1,3}(?:,\d{3})+\.\d+|\d+\.\d+|(?:\d{1,3}(?:,\d{3})+|\d+)(?=\s?(?:×(?!\s?\d)|x\b|%|ms\b|s\b|MB\b|GB\b|KB\b|GiB\b|MiB\b|KiB\b|kB\b|minutes?\b|min\b|hours?\b|h\b|GFLOP\/s|tokens?\/s\b|sentences?\/s\b|M parameters|M\b|k\b))|(?<=(?:BLEU|chrF2?|BLEU of|BLEU =) )\d+)(?!\d|\.\d)/g;

/**
 * Numbers that look like measurements but are not, each with why. Keep this list short: a measured
 * figure belongs in records/claims.json.
 */
export const NOT_MEASUREMENTS: { pattern: RegExp; why: string }[] = [
  {
    pattern:
      /(?:PyTorch|torch|Node|Node\.js|sacreBLEU|ONNX Runtime|ONNX|onnxruntime(?:-\w+)?|Python|TypeScript|transformers|tokenizers|PEFT|peft|sentencepiece|safetensors|opset|IR|version|v)(?: since| from| before)? ?\d+(?:\.\d+|\.x)+/g,
    why: "a tool's version",
  },
  { pattern: /\d+\.\d+\.\d+/g, why: 'a version (major.minor.patch)' },
  {
    pattern:
      /(?:α|alpha|default|factor|kept at|dropout|label smoothing|smoothing|temperature|top-p|weight decay|betas?|β[12]?|ε|lr|learning rate|clipping at|p <) ?(?:(?:of the grid|grid|is kept at|kept at|=|:) )?\d*\.?\d+(?:(?:\/|, | and |, and )\d*\.?\d+)*/g,
    why: 'a setting of a recipe or a decoder (an input, not a result), a list of them, or a significance level',
  },
  { pattern: /\d+% (?=\[)|Δ 95%/g, why: "a bootstrap interval's confidence level (a setting)" },
  { pattern: /(?:§|[Ss]ection|Table|issue|step) ?\d+(?:\.\d+)+/g, why: 'a section number of the paper or a doc' },
  { pattern: /\d+(?:\.\d+)?e-?\d+/g, why: 'a tolerance or a learning rate in scientific notation (a setting)' },
  {
    pattern:
      /\d+\^\d+ floats \(\d+ GiB\)|(?:slower than|faster than|past|exceeds?|after|every|outlives|open|at most|at least|memory is|up to|over the issue's|issue \d+'s|target of|≤|≥) \d[\d,.]*(?![\d^])|\d[\d,.]* ?(?:ms|s|MiB|GiB|KB|MB) (?:watchdog|timeout|for model configs|with js|downloads|at a time)/g,
    why: 'a limit, a timeout or a target that the code, a test or an issue sets (not a result)',
  },
  { pattern: /\b(?:124M|355M|774M|1\.5B|1\.56B)/g, why: "the GPT-2 family's published sizes, used as names" },
];

/** One figure of the prose: its text and where it starts in the one-line text. */
export interface Figure {
  text: string;
  at: number;
}

/** The figures of `raw` (a Markdown file) that are prose measurements and not in the allow-list. */
export function figuresIn(raw: string): { line: string; figures: Figure[] } {
  const line = oneLine(raw);
  const skip = notProse(line);
  const comments = shellComments(raw);
  const allowed: [number, number][] = [];
  for (const { pattern } of NOT_MEASUREMENTS)
    for (const m of line.matchAll(pattern)) allowed.push([m.index, m.index + m[0].length]);
  const inside = (at: number, ranges: [number, number][]) => ranges.some(([a, b]) => at >= a && at < b);
  const figures: Figure[] = [];
  for (const m of line.matchAll(FIGURE)) {
    if ((inside(m.index, skip) && !inside(m.index, comments)) || inside(m.index, allowed)) continue;
    figures.push({ text: m[0], at: m.index });
  }
  return { line, figures };
}

/**
 * The comments of shell code blocks (`npm run pack:release # … 2 MB installed`), as ranges of the
 * one-line text: they are prose a reader takes as a claim, though they stand in code.
 */
function shellComments(raw: string): [number, number][] {
  // Where each character of `raw` lands in oneLine(raw): a run of whitespace becomes one space.
  const at: number[] = [];
  let n = 0;
  for (let i = 0; i < raw.length; i++) {
    at.push(n);
    if (!(/\s/.test(raw[i]) && i > 0 && /\s/.test(raw[i - 1]))) n++;
  }
  at.push(n);
  const ranges: [number, number][] = [];
  for (const block of raw.matchAll(/^```(?:sh|bash|shell|console)\n([\s\S]*?)^```/gm)) {
    const start = block.index + block[0].indexOf('\n') + 1;
    for (const c of block[1].matchAll(/(?:^|\s)#\s[^\n]*/g)) {
      const a = start + c.index;
      ranges.push([at[a], at[a + c[0].length]]);
    }
  }
  return ranges;
}

/** `line` around `at`, for a message: about 40 characters either side. */
export function around(line: string, at: number, length: number): string {
  const a = Math.max(0, at - 40);
  const b = Math.min(line.length, at + length + 40);
  return `${a > 0 ? '…' : ''}${line.slice(a, at)}[${line.slice(at, at + length)}]${line.slice(at + length, b)}${b < line.length ? '…' : ''}`;
}
