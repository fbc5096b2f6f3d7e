/** HuggingFaceTB's SmolLM3: Llama without RoPE on every fourth layer (transformers' SmolLM3Config, llama.cpp src/models/smollm3.cpp). */
import type { DecoderVariant } from '../decoder/config';

declare module '../decoder/config' {
  interface DecoderArchitectures {
    smollm3: true;
  }
}

export const smollm3: DecoderVariant = {
  title: 'SmolLM3',
  qkNorm: false, qkvBias: false, ggufRopePairing: 'interleaved', ggufDefaultEps: 1e-6, ggufArchitecture: 'smollm3',
  hfModelTypes: ['smollm3'], hfClass: 'SmolLM3ForCausalLM', hfClassPattern: /^SmolLM3ForCausalLM$/, hfDefaultMaxPositions: 32768,
  noRopeLayerInterval: 4,
};
