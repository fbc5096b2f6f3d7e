/** Alibaba's Qwen2 (q/k/v biases) and Qwen3 (QK-norm), HF's qwen2 / qwen3 and GGUF's of the same names. */
import type { DecoderVariant } from '../decoder/config';

declare module '../decoder/config' {
  interface DecoderArchitectures {
    qwen2: true;
    qwen3: true;
  }
}

export const qwen2: DecoderVariant = {
  title: 'Qwen2',
  qkNorm: false, qkvBias: true, ggufRopePairing: 'half', ggufDefaultEps: 1e-6, ggufArchitecture: 'qwen2',
  hfModelTypes: ['qwen2'], hfClass: 'Qwen2ForCausalLM', hfClassPattern: /^Qwen2ForCausalLM$/, hfDefaultMaxPositions: 32768,
};

export const qwen3: DecoderVariant = {
  title: 'Qwen3',
  qkNorm: true, qkvBias: false, ggufRopePairing: 'half', ggufDefaultEps: 1e-6, ggufArchitecture: 'qwen3',
  hfModelTypes: ['qwen3'], hfClass: 'Qwen3ForCausalLM', hfClassPattern: /^Qwen3(?!Moe)/, hfDefaultMaxPositions: 32768, defaultChatTemplate: 'qwen3',
};
