/**
 * Mistral: Llama with sliding-window attention on every layer. config.json's `sliding_window`
 * (null: full attention; absent: MistralConfig's 4096). llama.cpp converts Mistral as `llama` and
 * keeps no window; weightmap's GGUF writer stores it as `llama.attention.sliding_window`, which is
 * how a `llama` file reads back as Mistral.
 */
import type { DecoderVariant } from '../decoder/config';

declare module '../decoder/config' {
  interface DecoderArchitectures {
    mistral: true;
  }
}

export const mistral: DecoderVariant = {
  title: 'Mistral',
  qkNorm: false, qkvBias: false, ggufRopePairing: 'interleaved', ggufDefaultEps: 1e-5, ggufArchitecture: 'llama',
  hfModelTypes: ['mistral'], hfClass: 'MistralForCausalLM', hfClassPattern: /^MistralForCausalLM$/, hfDefaultMaxPositions: 131072,
  hooks: {
    hfSlidingWindow: (f) => (f.raw('sliding_window') === null ? {} : { slidingWindow: f.int('sliding_window', 4096) }),
    toHfSlidingWindow(c, out) {
      out.sliding_window = c.slidingWindow ?? null;
    },
    ggufClaims: (kv) => kv.int('attention.sliding_window', 0, 0) > 0,
    fromGguf(kv, c) {
      c.slidingWindow = kv.int('attention.sliding_window', 0, 0);
    },
  },
};
