/** Alibaba's Qwen2 (q/k/v biases) and Qwen3 (QK-norm), HF's qwen2 / qwen3 and GGUF's of the same names. */
import type { DecoderRetrieval, DecoderVariant } from '../decoder/config';

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

/** Qwen3-Embedding's and Qwen3-Reranker's model cards. */
const QWEN3_RETRIEVAL: DecoderRetrieval = {
  embeddingQuery: (instruction) => `Instruct: ${instruction}\nQuery:`,
  yesNo: {
    prefix:
      '<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct provided. ' +
      'Note that the answer can only be "yes" or "no".<|im_end|>\n<|im_start|>user\n',
    suffix: '<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n',
    userTurn: (instruction, query, document) => `<Instruct>: ${instruction}\n<Query>: ${query}\n<Document>: ${document}`,
    defaultInstruction: 'Given a web search query, retrieve relevant passages that answer the query',
    marker: /qwen3-reranker/i,
  },
};

export const qwen3: DecoderVariant = {
  title: 'Qwen3',
  qkNorm: true, qkvBias: false, ggufRopePairing: 'half', ggufDefaultEps: 1e-6, ggufArchitecture: 'qwen3',
  hfModelTypes: ['qwen3'], hfClass: 'Qwen3ForCausalLM', hfClassPattern: /^Qwen3(?!Moe)/, hfDefaultMaxPositions: 32768, defaultChatTemplate: 'qwen3',
  retrieval: QWEN3_RETRIEVAL,
};
