/**
 * Microsoft Phi-3 / Phi-3.5-mini and Phi-4-mini (transformers' Phi3Config, llama.cpp
 * src/models/phi3.cpp). Checkpoints hold q/k/v as one `qkv_proj` and gate/up as one
 * `gate_up_proj`; GGUF as `attn_qkv` and an `ffn_up` of twice the FFN width, gate first.
 */
import type { DecoderVariant } from '../decoder/config';

declare module '../decoder/config' {
  interface DecoderArchitectures {
    phi3: true;
  }
}

export const phi3: DecoderVariant = {
  title: 'Phi-3',
  qkNorm: false, qkvBias: false, ggufRopePairing: 'half', ggufDefaultEps: 1e-5, ggufArchitecture: 'phi3',
  hfModelTypes: ['phi3'], hfClass: 'Phi3ForCausalLM', hfClassPattern: /^Phi3ForCausalLM$/, hfDefaultMaxPositions: 4096,
  fused: [
    { hf: 'self_attn.qkv_proj', gguf: 'attn_qkv', parts: ['q', 'k', 'v'] },
    { hf: 'mlp.gate_up_proj', gguf: 'ffn_up', parts: ['gate', 'up'] },
  ],
};
