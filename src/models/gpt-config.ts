import type { RopeScaling } from '../nn/rotary.ts';

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
  /**
   * 'learned': GPT-2's trained table wpe; 'sinusoidal': the paper's fixed sinusoids (§3.5), no parameters;
   * 'rotary': RoPE on every head's queries and keys (Llama, Qwen2, Mistral; see `rope`), nothing added to the
   * embeddings.
   */
  positions: 'learned' | 'sinusoidal' | 'rotary';
  /**
   * The MLP's nonlinearity: 'gelu' (the exact erf form, the default) or 'gelu_tanh' (GPT-2's
   * `gelu_new`, the tanh approximation that OpenAI's released weights were trained with).
   */
  activation?: GPTActivation;
  /** ε of every LayerNorm (default 1e-5, GPT-2's layer_norm_epsilon), or of every RMSNorm (rms_norm_eps). */
  layerNormEps?: number;

  // The switches of today's decoders (Llama, Qwen2, Mistral); absent, each is GPT-2's choice.
  /** 'layer' (GPT-2's LayerNorm, the default) or 'rms' (RMSNorm: Llama's input/post-attention/final norms). */
  norm?: 'layer' | 'rms';
  /** 'gelu' (GPT-2's c_fc, c_proj with `activation`, the default) or 'swiglu' (gate_proj, up_proj, down_proj). */
  mlp?: 'gelu' | 'swiglu';
  /** The MLP's inner width (intermediate_size; default 4·nEmbd, GPT-2's). */
  dFf?: number;
  /** Key/value heads (num_key_value_heads; default nHead): grouped-query attention when fewer. */
  nKVHead?: number;
  /** Each head's width (head_dim; default nEmbd / nHead). */
  headDim?: number;
  /** Biases on the query/key/value projections (default true, GPT-2's; Qwen2 true, Llama false). */
  qkvBias?: boolean;
  /** A bias on the attention's output projection (default true; Llama, Qwen2, Mistral false). */
  outBias?: boolean;
  /** Biases in the MLP (default true; Llama's mlp_bias, false). */
  mlpBias?: boolean;
  /** The output projection is the token embedding (default true); false: its own `lm_head` (vocabSize, nEmbd). */
  tiedHead?: boolean;
  /** positions 'rotary': the frequencies' base (rope_theta) and rescaling. */
  rope?: {
    /** The frequencies' base, rope_theta. */
    base: number;
    /** Their rescaling for long contexts (default: none). */
    scaling?: RopeScaling;
  };
  /** Sliding-window attention (Mistral): query i sees keys j with i − j < slidingWindow only, in `slidingLayers`. */
  slidingWindow?: number;
  /** The blocks the sliding window applies to (default: all of them when slidingWindow is set). */
  slidingLayers?: number[];
}

/** The MLP's nonlinearity: `gelu` the exact erf form, `gelu_tanh` GPT-2's tanh approximation (`gelu_new`). */
export type GPTActivation = 'gelu' | 'gelu_tanh';
