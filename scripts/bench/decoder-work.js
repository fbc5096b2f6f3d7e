// The work one decoder step does, from a model's tensors (ModelWeights from readWeights): the
// bytes a decode step reads (weights, and the KV cache at its position), and the multiply-adds a
// prompt token costs in prefill.
// The denominators of the benchmarks' "share of the bound" figures (decoder.js, peers.js).
'use strict';

const EMBEDDING = 'model.embed_tokens.weight';
const CLASSIFIER = 'lm_head.weight';

/** Bytes of weights one decode step reads: every matrix (values + scales), the classifier, one embedding row. */
function bytesPerToken(weights) {
  const c = weights.config;
  let bytes = 0;
  for (const t of weights.tensors) {
    const size = t.byteLength + (t.scales ? t.scales.byteLength : 0);
    if (t.name === EMBEDDING) bytes += c.tieWordEmbeddings ? size : size / c.vocabSize;
    else bytes += size;
  }
  return bytes;
}

/**
 * Bytes of KV cache the decode steps at positions first .. first + steps - 1 read per step, on
 * average: step p reads the keys and values of positions 0 .. p in every layer.
 */
function kvBytesPerToken(kvBytesPerPosition, first, steps) {
  return kvBytesPerPosition * (first + (steps + 1) / 2);
}

/**
 * Multiply-adds per token of a `prompt`-token prefill that computes logits at the last position
 * only: `linear` (the layers' matrices, plus the classifier's once per prompt; int8 work in a
 * quantized engine) and `attention` (q·k and p·v over an average of (prompt + 1) / 2 positions, f32).
 */
function prefillMacsPerToken(weights, prompt, depth = 0) {
  const c = weights.config;
  let linear = 0;
  for (const t of weights.tensors) {
    if (t.shape.length !== 2 || t.name === EMBEDDING || t.name === CLASSIFIER) continue;
    linear += t.shape[0] * t.shape[1];
  }
  linear += (c.vocabSize * c.hiddenSize) / prompt;
  // positions seen: depth (already cached, --depth) plus (prompt + 1) / 2 of the prompt's own, on average
  const attention = c.numLayers * c.numHeads * c.headDim * 2 * (depth + (prompt + 1) / 2);
  return { linear, attention };
}

module.exports = { bytesPerToken, kvBytesPerToken, prefillMacsPerToken };
