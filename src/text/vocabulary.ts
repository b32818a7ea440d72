/**
 * The id ↔ token tables that BpeTokenizer and CharTokenizer both keep (token i is vocab[i]), and
 * the lookups they answer the same way. Each tokenizer still checks its own rules on the tokens.
 */
export abstract class Vocabulary {
  /** Token of each id: token i is vocab[i]. */
  protected readonly vocab: string[];
  /** Id of each token, the inverse of `vocab`. */
  protected readonly ids: Map<string, number>;

  /**
   * Indexes `vocab`, throwing `${owner}: duplicate token …` on a repeat. `check` (the subclass's own
   * rule on a token) runs on each token first, in id order.
   */
  protected constructor(vocab: string[], owner: string, check?: (token: string, id: number) => void) {
    this.vocab = vocab;
    this.ids = new Map();
    vocab.forEach((t, i) => {
      check?.(t, i);
      if (this.ids.has(t)) throw new Error(`${owner}: duplicate token ${JSON.stringify(t)}`);
      this.ids.set(t, i);
    });
  }

  /** Number of tokens (ids are 0 .. vocabSize − 1). */
  get vocabSize(): number {
    return this.vocab.length;
  }

  /** The token with this id, or undefined. */
  idToToken(id: number): string | undefined {
    return this.vocab[id];
  }

  /** The id of this token, or undefined. */
  tokenToId(token: string): number | undefined {
    return this.ids.get(token);
  }
}
