/**
 * sentence-transformers' Dense modules after the pooling (EmbeddingGemma's 2_Dense 768 → 3072 and
 * 3_Dense 3072 → 768): each `<path>/config.json` (in_features, out_features, bias,
 * activation_function) and `<path>/model.safetensors` (linear.weight [out, in], linear.bias), or
 * a GGUF's dense_2 / dense_3 (llama.cpp's converter with --sentence-transformers-dense-modules),
 * applied to the pooled vectors in order. Only the identity activation is run (EmbeddingGemma's);
 * another is UNSUPPORTED.
 */
import * as fs from 'node:fs';
import * as nodePath from 'node:path';
import { WeightFormatError } from '../base/errors';
import { mapFile } from '../addon/mapping';
import { findTensor, numel, type ModelWeights } from '../addon/weights';
import { EMBEDDING_DENSE } from '../architectures/decoder';
import { dequantize } from '../formats/quantization/dequantize';
import { parseSafetensors } from '../formats/containers/safetensors';
import { readJsonFile } from '../formats/containers/hf-config';

export interface DenseLayer {
  inFeatures: number;
  outFeatures: number;
  /** [outFeatures, inFeatures] */
  weight: Float32Array;
  bias?: Float32Array;
}

const IDENTITY = ['torch.nn.modules.linear.Identity', 'torch.nn.Identity'];

function fail(code: 'BAD_HEADER' | 'UNSUPPORTED' | 'SHAPE_MISMATCH' | 'MISSING_TENSOR', message: string, path: string, details: { expected?: unknown; found?: unknown } = {}): never {
  throw new WeightFormatError(code, message, { path, ...details });
}

/** The Dense modules of modules.json (in order), read from the folder; `width` is the pooled vectors' length. */
export async function readDenseModules(folder: string, modules: readonly unknown[], width: number): Promise<DenseLayer[]> {
  const layers: DenseLayer[] = [];
  for (const m of modules) {
    if (typeof m !== 'object' || m === null || !String((m as { type?: unknown }).type).endsWith('models.Dense')) continue;
    const rel = String((m as { path?: unknown }).path ?? '');
    const dir = nodePath.resolve(folder, rel);
    if (!dir.startsWith(nodePath.resolve(folder) + nodePath.sep)) fail('BAD_HEADER', 'modules.json points outside the model folder', nodePath.join(folder, 'modules.json'), { found: rel });
    const configPath = nodePath.join(dir, 'config.json');
    const config = readJsonFile(configPath) as Record<string, unknown>;
    const inFeatures = config.in_features, outFeatures = config.out_features;
    if (!Number.isSafeInteger(inFeatures) || !Number.isSafeInteger(outFeatures) || (outFeatures as number) < 1) fail('BAD_HEADER', 'in_features and out_features must be positive integers', configPath, { found: { inFeatures, outFeatures } });
    if (inFeatures !== width) fail('SHAPE_MISMATCH', 'a Dense module does not take the vectors before it', configPath, { expected: width, found: inFeatures });
    const activation = config.activation_function ?? IDENTITY[0];
    if (!IDENTITY.includes(String(activation))) fail('UNSUPPORTED', `Dense activation '${String(activation)}'`, configPath, { expected: IDENTITY[0], found: activation });
    const weightsPath = nodePath.join(dir, 'model.safetensors');
    if (!fs.existsSync(weightsPath)) fail('MISSING_TENSOR', 'the Dense module has no model.safetensors', weightsPath);
    const src = mapFile(weightsPath);
    try {
      const file = parseSafetensors(src);
      const weight = file.tensors.find((t) => t.name === 'linear.weight');
      if (!weight) fail('MISSING_TENSOR', "no 'linear.weight'", weightsPath, { expected: 'linear.weight', found: 'absent' });
      if (weight.shape.length !== 2 || weight.shape[0] !== outFeatures || weight.shape[1] !== inFeatures) {
        fail('SHAPE_MISMATCH', "'linear.weight' is not [out_features, in_features]", weightsPath, { expected: [outFeatures, inFeatures], found: weight.shape });
      }
      const biasView = file.tensors.find((t) => t.name === 'linear.bias');
      if (config.bias === true && !biasView) fail('MISSING_TENSOR', "bias: true but no 'linear.bias'", weightsPath, { expected: 'linear.bias', found: 'absent' });
      if (biasView && numel(biasView.shape) !== outFeatures) fail('SHAPE_MISMATCH', "'linear.bias' is not [out_features]", weightsPath, { expected: [outFeatures], found: biasView.shape });
      layers.push({
        inFeatures: inFeatures as number,
        outFeatures: outFeatures as number,
        weight: await dequantize(weight),
        ...(biasView ? { bias: await dequantize(biasView) } : {}),
      });
    } finally {
      src.close();
    }
    width = outFeatures as number;
  }
  return layers;
}

/** An embedding GGUF's projections (EMBEDDING_DENSE: llama.cpp's dense_2 and dense_3), those present, in order. */
export async function denseOfWeights(weights: ModelWeights, width: number): Promise<DenseLayer[]> {
  const layers: DenseLayer[] = [];
  for (const name of EMBEDDING_DENSE) {
    const view = findTensor(weights, name);
    if (!view) continue;
    if (view.shape.length !== 2 || view.shape[1] !== width) fail('SHAPE_MISMATCH', `tensor '${name}' does not take the vectors before it`, weights.path, { expected: ['out', width], found: view.shape });
    layers.push({ inFeatures: width, outFeatures: view.shape[0], weight: await dequantize(view) });
    width = view.shape[0];
  }
  return layers;
}

/** vectors [n, layers[0].inFeatures] through every layer: [n, last outFeatures]. */
export function applyDense(vectors: Float32Array, layers: readonly DenseLayer[]): Float32Array {
  let x = vectors;
  for (const layer of layers) {
    const n = x.length / layer.inFeatures;
    const y = new Float32Array(n * layer.outFeatures);
    for (let r = 0; r < n; r++) {
      const row = x.subarray(r * layer.inFeatures, (r + 1) * layer.inFeatures);
      for (let o = 0; o < layer.outFeatures; o++) {
        const w = layer.weight.subarray(o * layer.inFeatures, (o + 1) * layer.inFeatures);
        let dot = layer.bias ? layer.bias[o] : 0;
        for (let i = 0; i < layer.inFeatures; i++) dot += w[i] * row[i];
        y[r * layer.outFeatures + o] = dot;
      }
    }
    x = y;
  }
  return x;
}
