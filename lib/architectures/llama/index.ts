/** Meta's Llama (1, 2, 3.x): the decoder every other variant is told apart from. */
import type { DecoderVariant } from '../decoder/config';

declare module '../decoder/config' {
  interface DecoderArchitectures {
    llama: true;
  }
}

export const llama: DecoderVariant = {
  title: 'Llama',
  qkNorm: false, qkvBias: false, ggufRopePairing: 'interleaved', ggufDefaultEps: 1e-5, ggufArchitecture: 'llama',
  hfModelTypes: ['llama'], hfClass: 'LlamaForCausalLM', hfClassPattern: /^Llama/, hfDefaultMaxPositions: 2048,
  // A Llama config.json's use_sliding_window is not refused: Llama has no sliding window to turn on.
  hooks: { hfSlidingWindow: () => ({}) },
};
