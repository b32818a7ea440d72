/**
 * Seeded random numbers. xoshiro128** for uniform 32-bit draws (fast, good statistics, tiny state),
 * Box-Muller for normals. Deterministic across Node and browsers; not bit-identical to PyTorch's
 * Mersenne Twister, so tests compare PyTorch by loading its tensors, never by re-drawing them.
 */
export class Generator {
  private s0 = 0;
  private s1 = 0;
  private s2 = 0;
  private s3 = 0;
  private spare: number | null = null;

  constructor(seed = 0) {
    this.manualSeed(seed);
  }

  /** Reset the stream; splitmix32 spreads the seed over the 128-bit state. */
  manualSeed(seed: number): this {
    let x = seed >>> 0;
    const next = (): number => {
      x = (x + 0x9e3779b9) >>> 0;
      let z = x;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.s0 = next();
    this.s1 = next();
    this.s2 = next();
    this.s3 = next();
    this.spare = null;
    return this;
  }

  /** The full state, so a training run can checkpoint and resume its random stream exactly. */
  getState(): number[] {
    return [this.s0, this.s1, this.s2, this.s3, this.spare ?? Number.NaN];
  }

  /**
   * Restore a state that getState() returned (four 32-bit words and the spare normal, NaN for none); throws
   * unless it has 5 numbers.
   */
  setState(state: readonly number[]): void {
    if (state.length !== 5) throw new Error(`Generator.setState: expected 5 numbers, got ${state.length}`);
    [this.s0, this.s1, this.s2, this.s3] = state.map((v) => v >>> 0);
    this.spare = Number.isNaN(state[4]) ? null : state[4];
  }

  /**
   * Fill `out` with the next out.length values of nextUint32(), the same stream, with the state
   * held in locals for the loop: the bulk path for dropout masks (tens of millions per step).
   */
  fillUint32(out: Uint32Array): void {
    let s0 = this.s0 | 0,
      s1 = this.s1 | 0,
      s2 = this.s2 | 0,
      s3 = this.s3 | 0;
    const n = out.length;
    for (let i = 0; i < n; i++) {
      const r = Math.imul(s1, 5);
      out[i] = Math.imul((r << 7) | (r >>> 25), 9);
      const t = s1 << 9;
      s2 ^= s0;
      s3 ^= s1;
      s1 ^= s2;
      s0 ^= s3;
      s2 ^= t;
      s3 = (s3 << 11) | (s3 >>> 21);
    }
    this.s0 = s0 >>> 0;
    this.s1 = s1 >>> 0;
    this.s2 = s2 >>> 0;
    this.s3 = s3 >>> 0;
  }

  /** The next 32-bit draw of xoshiro128**, an integer in [0, 2³²). */
  nextUint32(): number {
    const result = Math.imul(rotl(Math.imul(this.s1, 5) >>> 0, 7), 9) >>> 0;
    const t = (this.s1 << 9) >>> 0;
    this.s2 ^= this.s0;
    this.s3 ^= this.s1;
    this.s1 ^= this.s2;
    this.s0 ^= this.s3;
    this.s2 ^= t;
    this.s3 = rotl(this.s3, 11);
    this.s0 >>>= 0;
    this.s1 >>>= 0;
    this.s2 >>>= 0;
    return result;
  }

  /** Uniform in [0, 1) with 24 bits, so it is exactly representable in float32. */
  uniform(): number {
    return (this.nextUint32() >>> 8) / 16777216;
  }

  /** Standard normal (Box-Muller, both values used). */
  normal(): number {
    if (this.spare !== null) {
      const v = this.spare;
      this.spare = null;
      return v;
    }
    let u = 0;
    while (u === 0) u = this.uniform();
    const v = this.uniform();
    const r = Math.sqrt(-2 * Math.log(u));
    this.spare = r * Math.sin(2 * Math.PI * v);
    return r * Math.cos(2 * Math.PI * v);
  }

  /** Integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.uniform() * n);
  }
}

function rotl(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}

/** The process-wide default generator, like torch's default CPU generator. */
export const defaultGenerator = new Generator(0);

/** Seed the default generator (torch.manual_seed). */
export function manualSeed(seed: number): void {
  defaultGenerator.manualSeed(seed);
}
