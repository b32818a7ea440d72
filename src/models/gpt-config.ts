/**
 * The GPT's configuration, on its own so that the Hugging Face mapping (hf/gpt2.ts) can name it
 * without importing the model that imports the mapping (models/gpt.ts re-exports it).
 */
export interface GPTConfig {
  /** Tokens in the vocabulary (set from the tokenizer). */
  vocabSize: number;
  /** Context length: the most positions the model sees at once (GPT-2: 1024). */
  blockSize: number;
  /** Number of transformer blocks. */
  nLayer: number;
  /** Attention heads per block; each is nEmbd / nHead wide. */
  nHead: number;
  /** Width of the embeddings and of the residual stream (d_model). The MLP is 4·nEmbd wide. */
  nEmbd: number;
  /** Dropout on embeddings+positions, on attention weights and on each block's two outputs (GPT-2: 0.1). */
  dropout: number;
  /** 'learned': GPT-2's trained table wpe; 'sinusoidal': the paper's fixed sinusoids (§3.5), no parameters. */
  positions: 'learned' | 'sinusoidal';
  /**
   * The MLP's nonlinearity: 'gelu' (the exact erf form, the default) or 'gelu_tanh' (GPT-2's
   * `gelu_new`, the tanh approximation that OpenAI's released weights were trained with).
   */
  activation?: GPTActivation;
  /** ε of every LayerNorm (default 1e-5, GPT-2's layer_norm_epsilon). */
  layerNormEps?: number;
}

/** The MLP's nonlinearity: `gelu` the exact erf form, `gelu_tanh` GPT-2's tanh approximation (`gelu_new`). */
export type GPTActivation = 'gelu' | 'gelu_tanh';
