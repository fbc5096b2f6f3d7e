/** IBM Granite 3.x: Llama with four multipliers (transformers' GraniteConfig, llama.cpp src/models/granite.cpp). */
import type { DecoderVariant } from '../decoder/config';

declare module '../decoder/config' {
  interface DecoderArchitectures {
    granite: true;
  }
}

export const granite: DecoderVariant = {
  title: 'Granite',
  qkNorm: false, qkvBias: false, ggufRopePairing: 'interleaved', ggufDefaultEps: 1e-5, ggufArchitecture: 'granite',
  hfModelTypes: ['granite'], hfClass: 'GraniteForCausalLM', hfClassPattern: /^GraniteForCausalLM$/, hfDefaultMaxPositions: 2048,
  scalars: [
    { field: 'embeddingScale', hf: 'embedding_multiplier', gguf: 'embedding_scale', hfDefault: 1 },
    { field: 'residualScale', hf: 'residual_multiplier', gguf: 'residual_scale', hfDefault: 1 },
    { field: 'attentionScale', hf: 'attention_multiplier', gguf: 'attention.scale', hfDefault: 1 },
    { field: 'logitsScaling', hf: 'logits_scaling', gguf: 'logit_scale', hfDefault: 1 },
  ],
};
