/**
 * Moondream's config.json both ways (the keys of moon-tiny/config.json, which MOON files and HF
 * folders of Moondream2 share; absent keys are Moondream2's) and the checks of a config.
 */
import { WeightFormatError } from '../../base/errors';
import { MOONDREAM2_CONFIG, type MoondreamConfig } from './index';

function fail(code: 'BAD_HEADER' | 'CONFIG_MISMATCH', message: string, details: { path?: string; expected?: unknown; found?: unknown }): never {
  throw new WeightFormatError(code, message, details);
}

/** Throws CONFIG_MISMATCH unless every value is usable and the values agree with each other. */
export function validateMoondreamConfig(c: MoondreamConfig, path?: string): void {
  const positiveInts: [string, number][] = [
    ['text_dim', c.text.hiddenSize], ['text_layers', c.text.numLayers], ['text_heads', c.text.numHeads],
    ['text_head_dim', c.text.headDim], ['rotary_dim', c.text.rotaryDim], ['text_ffn', c.text.intermediateSize],
    ['vocab_size', c.text.vocabSize], ['max_seq_len', c.text.maxSeqLen],
    ['vision_dim', c.vision.hiddenSize], ['vision_layers', c.vision.numLayers], ['vision_heads', c.vision.numHeads],
    ['vision_head_dim', c.vision.headDim], ['vision_ffn', c.vision.intermediateSize], ['patch_size', c.vision.patchSize],
    ['image_size', c.vision.imageSize], ['n_patches', c.vision.numPatches], ['proj_hidden', c.vision.projHidden],
  ];
  for (const [name, v] of positiveInts) {
    if (!Number.isSafeInteger(v) || v <= 0 || v > 0x7fffffff) fail('CONFIG_MISMATCH', `${name} must be a positive 32-bit integer`, { path, expected: '1..2^31-1', found: v });
  }
  const check = (ok: boolean, message: string, expected: unknown, found: unknown) => ok || fail('CONFIG_MISMATCH', message, { path, expected, found });
  check(c.text.numHeads * c.text.headDim === c.text.hiddenSize, 'text_dim != text_heads * text_head_dim', c.text.numHeads * c.text.headDim, c.text.hiddenSize);
  check(c.text.rotaryDim <= c.text.headDim && c.text.rotaryDim % 2 === 0, 'rotary_dim must be even and at most text_head_dim', `even <= ${c.text.headDim}`, c.text.rotaryDim);
  check(c.vision.numHeads * c.vision.headDim === c.vision.hiddenSize, 'vision_dim != vision_heads * vision_head_dim', c.vision.numHeads * c.vision.headDim, c.vision.hiddenSize);
  check(c.vision.imageSize % c.vision.patchSize === 0, 'image_size is not a multiple of patch_size', `multiple of ${c.vision.patchSize}`, c.vision.imageSize);
  const grid = c.vision.imageSize / c.vision.patchSize;
  check(c.vision.numPatches === grid * grid, 'n_patches != (image_size / patch_size)^2', grid * grid, c.vision.numPatches);
  for (const [name, id] of [['bos_token_id', c.text.bosTokenId], ['eos_token_id', c.text.eosTokenId]] as const) {
    check(Number.isInteger(id) && id >= 0 && id < c.text.vocabSize, `${name} lies outside the vocabulary`, `0..${c.text.vocabSize - 1}`, id);
  }
  for (const [name, v] of [['rope_theta', c.text.ropeTheta], ['layer_norm_eps', c.text.layerNormEps], ['vision layer_norm_eps', c.vision.layerNormEps]] as const) {
    check(Number.isFinite(v) && v > 0, `${name} must be a positive number`, '> 0', v);
  }
}

/** config.json keys (as in moon-tiny/config.json) -> MoondreamConfig, Moondream2's value for each absent key. */
export function moondreamConfigFromJson(json: Record<string, unknown>, path?: string): MoondreamConfig {
  const d = MOONDREAM2_CONFIG;
  const num = (key: string, fallback: number): number => {
    const v = json[key];
    if (v === undefined) return fallback;
    if (typeof v !== 'number') return fail('BAD_HEADER', `config key ${key} is not a number`, { path, expected: 'number', found: v });
    return v;
  };
  const textDim = num('text_dim', d.text.hiddenSize);
  const textHeads = num('text_heads', d.text.numHeads);
  const visionDim = num('vision_dim', d.vision.hiddenSize);
  const visionHeads = num('vision_heads', d.vision.numHeads);
  const patch = num('patch_size', d.vision.patchSize);
  const image = num('image_size', d.vision.imageSize);
  const eps = num('layer_norm_eps', d.text.layerNormEps);
  const config: MoondreamConfig = {
    architecture: 'moondream',
    text: {
      hiddenSize: textDim,
      numLayers: num('text_layers', d.text.numLayers),
      numHeads: textHeads,
      headDim: num('text_head_dim', textDim / textHeads),
      rotaryDim: num('rotary_dim', d.text.rotaryDim),
      ropeTheta: num('rope_theta', d.text.ropeTheta),
      intermediateSize: num('text_ffn', d.text.intermediateSize),
      vocabSize: num('vocab_size', d.text.vocabSize),
      maxSeqLen: num('max_seq_len', d.text.maxSeqLen),
      layerNormEps: eps,
      bosTokenId: num('bos_token_id', d.text.bosTokenId),
      eosTokenId: num('eos_token_id', d.text.eosTokenId),
    },
    vision: {
      hiddenSize: visionDim,
      numLayers: num('vision_layers', d.vision.numLayers),
      numHeads: visionHeads,
      headDim: num('vision_head_dim', visionDim / visionHeads),
      intermediateSize: num('vision_ffn', d.vision.intermediateSize),
      patchSize: patch,
      imageSize: image,
      numPatches: num('n_patches', (image / patch) ** 2),
      layerNormEps: num('vision_layer_norm_eps', eps),
      projHidden: num('proj_hidden', d.vision.projHidden),
    },
  };
  validateMoondreamConfig(config, path);
  return config;
}

/** MoondreamConfig -> config.json (the keys moondreamConfigFromJson reads). */
export function moondreamConfigToJson(c: MoondreamConfig): Record<string, unknown> {
  return {
    text_dim: c.text.hiddenSize,
    text_layers: c.text.numLayers,
    text_heads: c.text.numHeads,
    rotary_dim: c.text.rotaryDim,
    rope_theta: c.text.ropeTheta,
    text_ffn: c.text.intermediateSize,
    vocab_size: c.text.vocabSize,
    max_seq_len: c.text.maxSeqLen,
    vision_dim: c.vision.hiddenSize,
    vision_layers: c.vision.numLayers,
    vision_heads: c.vision.numHeads,
    vision_ffn: c.vision.intermediateSize,
    patch_size: c.vision.patchSize,
    image_size: c.vision.imageSize,
    n_patches: c.vision.numPatches,
    proj_hidden: c.vision.projHidden,
    bos_token_id: c.text.bosTokenId,
    eos_token_id: c.text.eosTokenId,
    format: 'MOON v2',
    text_head_dim: c.text.headDim,
    vision_head_dim: c.vision.headDim,
    layer_norm_eps: c.text.layerNormEps,
    ...(c.vision.layerNormEps !== c.text.layerNormEps ? { vision_layer_norm_eps: c.vision.layerNormEps } : {}),
  };
}
