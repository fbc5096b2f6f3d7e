/**
 * A float64 BertForSequenceClassification in plain JS, from Hugging Face's modeling_bert.py: the
 * encoder of reference.ts (with the pair's token types), then the pooler (dense + tanh on the first
 * token) and the classifier. One pair at a time, no padding. The oracle of the reranker tests.
 */
import type { TinyCrossEncoder } from '../helpers/tiny-cross-encoder';
import { ReferenceBert } from './reference';

export function crossEncoderLogit(model: TinyCrossEncoder, ids: readonly number[], types: readonly number[], options: { pooler?: boolean } = {}): number {
  const { hidden: H, intermediate, heads, layers, eps } = model.config;
  const tensors = new Map([...model.tensors].map(([name, t]) => [name, t.data]));
  const bert = new ReferenceBert(tensors, { hiddenSize: H, intermediateSize: intermediate, numHeads: heads, numLayers: layers, layerNormEps: eps });
  let head = bert.hidden(ids, types).slice(0, H);
  if (options.pooler !== false) head = bert.linear(head, 1, 'pooler.dense', H, H).map(Math.tanh);
  return bert.linear(head, 1, 'classifier', H, 1)[0];
}
