/**
 * Yes/no rerankers (Qwen3-Reranker): a decoder asked whether a document meets a query, scored by
 * its next-token logits of "yes" and "no" at the end of the prompt of its model card (its family's
 * DecoderRetrieval.yesNo; Qwen3's):
 *
 *   <|im_start|>system\nJudge whether the Document meets the requirements based on the Query and
 *   the Instruct provided. Note that the answer can only be "yes" or "no".<|im_end|>\n
 *   <|im_start|>user\n<Instruct>: {instruction}\n<Query>: {query}\n<Document>: {document}<|im_end|>\n
 *   <|im_start|>assistant\n<think>\n\n</think>\n\n
 *
 * The decoder gives the final hidden state h of the prompt's last token (DecoderEngine.pool, no
 * head); the pair's logit is (w_yes − w_no)·h with w the head's rows of "yes" and "no" (an HF
 * folder's lm_head, or its token embedding when tied, by the tokenizer's ids of "yes" and "no"; a
 * GGUF's cls.output.weight, which llama.cpp's converter writes as those two rows), and its score
 * σ(logit) = softmax(l_yes, l_no)[yes] = P(yes), as the model card and llama.cpp compute it.
 * The user turn is tokenized as one text and, when the prompt is too long, cut from its end (the
 * model card's truncation of that one sequence): the document's end goes first.
 */
import { rangeError, UnsupportedError } from '../base/errors';
import { DECODER_NAMES, RERANK_HEAD, type DecoderConfig, type DecoderRetrieval } from '../architectures/decoder';
import { findTensor, rowBlockView, type ModelWeights, type TensorView } from '../addon/weights';
import { dequantize } from '../formats/quantization/dequantize';
import type { Tokenizer } from '../tokenizers';
import { encodeAsync } from '../tokenizer-loading';
import { decoderPoolingEngine, type PoolingEngine, type PoolingEngineOptions } from './embedding-engines';

/** The rows [yes, no] the pair's logit takes the difference of, as one vector w_yes − w_no [hiddenSize]. */
async function yesNoDirection(weights: ModelWeights, config: DecoderConfig, tokenizer: Tokenizer): Promise<Float32Array> {
  const rank = findTensor(weights, RERANK_HEAD);
  let yes: TensorView | undefined;
  let no: TensorView | undefined;
  if (rank) {
    yes = rowBlockView(rank, `${RERANK_HEAD}[yes]`, 0, 1);
    no = rowBlockView(rank, `${RERANK_HEAD}[no]`, 1, 1);
  } else {
    const yesId = tokenizer.tokenToId('yes');
    const noId = tokenizer.tokenToId('no');
    if (yesId === undefined || noId === undefined) throw new UnsupportedError(`the tokenizer of ${weights.path} has no "yes" and "no" tokens for a yes/no reranker`);
    const head = findTensor(weights, config.tieWordEmbeddings ? DECODER_NAMES.embed : DECODER_NAMES.lmHead);
    if (!head) throw new UnsupportedError(`${weights.path} has no head to take the "yes" and "no" rows of`);
    yes = rowBlockView(head, 'head[yes]', yesId, 1);
    no = rowBlockView(head, 'head[no]', noId, 1);
  }
  if (!yes || !no) throw new UnsupportedError(`the "yes" and "no" rows of ${weights.path} cannot be read one by one (a transposed or separately scaled matrix)`);
  const [y, n] = await Promise.all([dequantize(yes), dequantize(no)]);
  return y.map((v, i) => v - n[i]);
}

/** A yes/no reranker's pairs: their tokens, and a packed batch of them scored as raw logits. */
export interface YesNoModel {
  engine: PoolingEngine;
  /** Each pair's prompt ids, cut to maxSeqLength. */
  pairs(query: string, documents: readonly string[], instruction: string, maxSeqLength: number): Promise<number[][]>;
  /** logit_yes − logit_no of each packed prompt. */
  logits(ids: Int32Array, lengths: Int32Array, signal?: AbortSignal): Promise<Float32Array>;
}

/** `prompt`: the family's model card (DecoderRetrieval.yesNo). */
export async function loadYesNoModel(weights: ModelWeights, tokenizer: Tokenizer, prompt: DecoderRetrieval['yesNo'], options: PoolingEngineOptions): Promise<YesNoModel> {
  const config = weights.config as DecoderConfig;
  const direction = await yesNoDirection(weights, config, tokenizer);
  const [prefix, suffix] = await encodeAsync(tokenizer, [prompt.prefix, prompt.suffix], { addSpecialTokens: false, maxLength: Infinity });
  const engine = await decoderPoolingEngine(weights, options);
  const dim = config.hiddenSize;
  return {
    engine,
    async pairs(query, documents, instruction, maxSeqLength) {
      const room = maxSeqLength - prefix.length - suffix.length;
      if (room < 1) throw rangeError(`maxSeqLength ${maxSeqLength} leaves no room for a pair in the ${prefix.length + suffix.length} tokens of the prompt`);
      const turns = await encodeAsync(tokenizer, documents.map((d) => prompt.userTurn(instruction, query, d)), { addSpecialTokens: false, maxLength: Infinity });
      return turns.map((turn) => [...prefix, ...turn.slice(0, room), ...suffix]);
    },
    async logits(ids, lengths, signal) {
      const hidden = await engine.encode(ids, lengths, 'last', false, signal);
      const out = new Float32Array(lengths.length);
      for (let j = 0; j < lengths.length; j++) {
        let dot = 0;
        for (let i = 0; i < dim; i++) dot += hidden[j * dim + i] * direction[i];
        out[j] = dot;
      }
      return out;
    },
  };
}
