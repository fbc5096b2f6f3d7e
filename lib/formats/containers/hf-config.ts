/**
 * Hugging Face `config.json` (plus the sentence-transformers side files) <-> our configs.
 *
 * Read: the decoder variants (model_type and classes from the registry, lib/architectures) ->
 * DecoderConfig; BertModel (and other Bert* heads) / "bert" -> BertConfig, completed from `modules.json`,
 * `sentence_bert_config.json` and `<pooling>/config.json` when present; anything else 'unknown'.
 * Structural sizes are required; the rest default as transformers' config classes do. Features a
 * DecoderConfig cannot express (rope_scaling, attention/MLP biases, another activation) are
 * UNSUPPORTED rather than silently dropped. Two keys of ours ride along in decoder configs:
 * `rope_pairing` ('half' | 'interleaved'; HF checkpoints are 'half') and, in sepweight trees,
 * `sepweight_key_scheme`.
 *
 * The keys every decoder family shares are read and written here; a family's own through its
 * row's hooks (lib/architectures/<family>/). BERT's mapping (with the sentence-transformers files),
 * TLLM's and Moondream2's (model_type "moondream1" / HfMoondream, as vikhyatk/moondream2 publishes
 * it; absent keys are Moondream2's) live in their folders' config-json.ts; this file picks by
 * family.
 */
import * as fs from 'node:fs';
import * as nodePath from 'node:path';
import { ARCHITECTURES, architectureOf, architectureOfHf, isFamily, retrievalOf, type ArchitectureEntry, type Family, type KnownArchitecture } from '../../architectures';
import { DECODER_VARIANTS, decoderTitles, isDecoderArchitecture, isRopeLayer, variantScalars, isDecoderConfig, llama3RopeFactors, normWeightOffsetOf, variantFields, type DecoderActivation, type DecoderArchitecture, type Llama3RopeScaling, type DecoderConfig, type DecoderVariant } from '../../architectures/decoder';
import type { BertClassifierConfig, BertConfig } from '../../architectures/bert';
import type { ModelConfig } from '../../architectures/model-config';
import type { MoondreamConfig } from '../../architectures/moondream';
import type { TllmConfig } from '../../architectures/tllm';
import { bertClassifierConfigFromHfJson, bertConfigFromHfJson, hfConfigFromBertClassifier, hfFilesFromBert, type SentenceTransformersFiles } from '../../architectures/bert/config-json';
import { Fields, isObject, type HfJson } from '../../architectures/config-fields';
import { moondreamConfigFromJson, moondreamConfigToJson } from '../../architectures/moondream/config-json';
import { hfConfigFromTllm, tllmConfigFromHf } from '../../architectures/tllm/config-json';
import { fail } from './bytes';

export { bertClassifierConfigFromHfJson as bertClassifierConfigFromHf, hfConfigFromBertClassifier, hfConfigFromTllm, hfFilesFromBert, tllmConfigFromHf, type HfJson, type SentenceTransformersFiles };

/** config.json files above this are not configs. */
const MAX_JSON_BYTES = 16 << 20;

export type HfArchitecture = KnownArchitecture | 'unknown';


/** Which of our architectures an HF config describes. */
export function hfArchitecture(hf: HfJson): HfArchitecture {
  const modelType = typeof hf.model_type === 'string' ? hf.model_type : undefined;
  const classes = Array.isArray(hf.architectures) ? hf.architectures.filter((a): a is string => typeof a === 'string') : [];
  return architectureOfHf(modelType || undefined, classes)?.name ?? 'unknown';
}


/** How config.json names each decoder activation, and how messages describe it. */
const HF_ACTIVATIONS: Record<DecoderActivation, { name: string; title: string }> = {
  silu: { name: 'silu', title: 'SwiGLU with silu' },
  gelu_tanh: { name: 'gelu_pytorch_tanh', title: 'GeGLU with tanh GELU' },
};

function unsupported(path: string | undefined, what: string, found: unknown): never {
  return fail('UNSUPPORTED', what, { path, found });
}

/** Llama 3's rope_scaling as its four numbers; plain RoPE (absent or 'default') gives undefined. */
function llama3Scaling(hf: HfJson, path: string | undefined): Llama3RopeScaling | undefined {
  if (hf.rope_scaling === undefined || hf.rope_scaling === null) return undefined;
  const scaling = hf.rope_scaling;
  const type = isObject(scaling) ? scaling.rope_type ?? scaling.type : scaling;
  if (type === 'default') return undefined;
  if (type !== 'llama3' || !isObject(scaling)) return unsupported(path, "rope_scaling (plain RoPE and 'llama3' are implemented)", scaling);
  const f = new Fields(scaling, path);
  const p = { factor: f.num('factor', 8), low_freq_factor: f.num('low_freq_factor', 1), high_freq_factor: f.num('high_freq_factor', 4), original_max_position_embeddings: f.int('original_max_position_embeddings', 8192) };
  if (!(p.factor > 0) || !(p.high_freq_factor > p.low_freq_factor)) fail('CONFIG_MISMATCH', "rope_scaling 'llama3' needs factor > 0 and high_freq_factor > low_freq_factor", { path, found: scaling });
  return p;
}

/**
 * Sliding-window attention of an HF config, as the variant's family reads it (Mistral's, Gemma 3's);
 * a variant without sliding-window keys refuses `use_sliding_window: true`.
 */
function hfSlidingWindow(f: Fields, variant: DecoderVariant, numLayers: number): Pick<DecoderConfig, 'slidingWindow' | 'slidingWindowPattern'> {
  const read = variant.hooks?.hfSlidingWindow;
  if (read) return read(f, numLayers);
  if (f.bool('use_sliding_window', false)) unsupported(f.path, 'sliding-window attention', true);
  return {};
}

/**
 * SmolLM3's layers without RoPE: `no_rope_layers` (1: the layer rotates, one entry per layer) when
 * given, which must be "every Nth layer" for N = no_rope_layer_interval (default: the variant's).
 */
function hfNoRopeInterval(f: Fields, architecture: DecoderArchitecture, numLayers: number): number | undefined {
  const fixed = DECODER_VARIANTS[architecture].noRopeLayerInterval;
  if (fixed === undefined) return undefined;
  const interval = f.int('no_rope_layer_interval', fixed);
  const list = f.json.no_rope_layers;
  if (list === undefined || list === null) return interval;
  const want = Array.from({ length: numLayers }, (_, l) => (isRopeLayer({ noRopeLayerInterval: interval }, l) ? 1 : 0));
  if (!Array.isArray(list) || list.length !== numLayers || list.some((v, l) => v !== want[l])) {
    return unsupported(f.path, `no_rope_layers other than every ${interval}th layer (no_rope_layer_interval)`, list);
  }
  return interval;
}

/** DecoderConfig from the config.json of a decoder variant (DECODER_VARIANTS). */
export function decoderConfigFromHf(hf: HfJson, path?: string): DecoderConfig {
  const architecture = hfArchitecture(hf);
  if (!isDecoderArchitecture(architecture)) {
    return fail('CONFIG_MISMATCH', `config.json does not describe a ${decoderTitles()} model`, { path, expected: Object.keys(DECODER_VARIANTS).join(' | '), found: hf.model_type ?? hf.architectures });
  }
  const variant = DECODER_VARIANTS[architecture];
  const f = new Fields(hf, path);
  const actKey = variant.hfActivationKey ?? 'hidden_act';
  const otherKey = actKey === 'hidden_act' ? 'hidden_activation' : 'hidden_act';
  const wanted = HF_ACTIVATIONS[variant.activation ?? 'silu'];
  const act = f.str(actKey) ?? f.str(otherKey) ?? wanted.name;
  if (act !== wanted.name) unsupported(path, `activation '${act}' (the ${architecture} decoder runs ${wanted.title})`, act);
  // A family that reads rope_scaling itself (gpt-oss's YaRN) does so in its fromHfRopeScaling hook.
  const scaling = variant.hooks?.fromHfRopeScaling ? undefined : llama3Scaling(hf, path);
  // Qwen2's q/k/v biases are part of the architecture (its config has no attention_bias key);
  // gpt-oss's attention_bias: true names its own (hfAttentionBias).
  if (f.bool('attention_bias', false) && !variant.hfAttentionBias) unsupported(path, 'attention biases', true);
  if (f.bool('mlp_bias', false)) unsupported(path, 'MLP biases', true);
  for (const key of ['final_logit_softcapping', 'attn_logit_softcapping']) if (f.has(key)) unsupported(path, `${key} (Gemma 2's soft-capping)`, hf[key]);

  const hiddenSize = f.int('hidden_size');
  const numHeads = f.int('num_attention_heads');
  const numKvHeads = f.int('num_key_value_heads', numHeads);
  let headDim: number;
  if (f.has('head_dim')) headDim = f.int('head_dim');
  else if (variant.hfDefaults?.headDim !== undefined) headDim = variant.hfDefaults.headDim;
  else {
    if (hiddenSize % numHeads !== 0) fail('CONFIG_MISMATCH', 'hidden_size is not a multiple of num_attention_heads and head_dim is absent', { path, expected: `multiple of ${numHeads}`, found: hiddenSize });
    headDim = hiddenSize / numHeads;
  }
  if (numHeads % numKvHeads !== 0) fail('CONFIG_MISMATCH', 'num_attention_heads is not a multiple of num_key_value_heads', { path, expected: `multiple of ${numKvHeads}`, found: numHeads });
  if (headDim % 2 !== 0) fail('CONFIG_MISMATCH', 'head_dim must be even for RoPE', { path, expected: 'even', found: headDim });

  // transformers ≥ 4.56 may nest theta under rope_parameters (Gemma 3: per attention kind).
  const nested = (kind: string) => (isObject(hf.rope_parameters) && isObject(hf.rope_parameters[kind]) ? new Fields(hf.rope_parameters[kind] as HfJson, path) : undefined);
  const ropeParams = nested('full_attention') ?? (isObject(hf.rope_parameters) ? new Fields(hf.rope_parameters, path) : undefined);
  const defaultTheta = variant.hfDefaults?.ropeTheta ?? 10000;
  const ropeTheta = f.has('rope_theta') ? f.num('rope_theta', defaultTheta) : ropeParams?.num('rope_theta', defaultTheta) ?? defaultTheta;
  const numLayers = f.int('num_hidden_layers');
  const pairing = f.str('rope_pairing') ?? 'half';
  if (pairing !== 'half' && pairing !== 'interleaved') fail('CONFIG_MISMATCH', "rope_pairing must be 'half' or 'interleaved'", { path, expected: 'half | interleaved', found: pairing });

  const config: DecoderConfig = {
    architecture,
    hiddenSize,
    intermediateSize: f.int('intermediate_size'),
    numLayers,
    numHeads,
    numKvHeads,
    headDim,
    vocabSize: f.int('vocab_size'),
    maxSeqLen: f.int('max_position_embeddings', variant.hfDefaultMaxPositions),
    rmsNormEps: f.num('rms_norm_eps', 1e-6),
    ropeTheta,
    ropePairing: pairing,
    tieWordEmbeddings: f.bool('tie_word_embeddings', variant.hfDefaults?.tieWordEmbeddings ?? false),
    ...variantFields(architecture, hiddenSize),
    ...hfSlidingWindow(f, variant, numLayers),
  };
  const normWeightOffset = normWeightOffsetOf(architecture, 'hf');
  if (normWeightOffset !== undefined) config.normWeightOffset = normWeightOffset;
  variant.hooks?.fromHf?.(f, config);
  variant.hooks?.fromHfRopeScaling?.(f.nested('rope_scaling'), config);
  // transformers' Phi3 (and others) rotate int(head_dim · partial_rotary_factor) dims.
  const ropeDim = Math.floor(headDim * (f.has('partial_rotary_factor') ? f.num('partial_rotary_factor', 1) : 1));
  if (ropeDim > headDim || ropeDim % 2 !== 0) fail('CONFIG_MISMATCH', 'partial_rotary_factor must leave an even number of rotated dims, at most head_dim', { path, expected: `even, <= ${headDim}`, found: hf.partial_rotary_factor });
  if (ropeDim !== headDim) config.ropeDim = ropeDim;
  const noRope = hfNoRopeInterval(f, architecture, numLayers);
  if (noRope !== undefined) config.noRopeLayerInterval = noRope;
  for (const s of variantScalars(architecture)) {
    const value = f.has(s.hf) ? f.num(s.hf, 1) : s.hfDefault;
    if (value !== undefined) config[s.field] = value;
  }
  if (scaling) config.ropeFreqFactors = llama3RopeFactors(headDim, ropeTheta, scaling);
  const bos = f.ids('bos_token_id');
  if (bos && bos.length === 1) config.bosTokenId = bos[0];
  const eos = f.ids('eos_token_id');
  if (eos && eos.length > 0) config.eosTokenIds = eos;
  return config;
}

/** An HF config.json object for a DecoderConfig; `extra` keys are appended (rope_pairing, torch_dtype, ...). */
export function hfConfigFromDecoder(c: DecoderConfig, extra: HfJson = {}): HfJson {
  // The factors alone do not give back rope_scaling's four numbers.
  if (c.ropeFreqFactors) fail('UNSUPPORTED', 'RoPE frequency factors (Llama 3 scaling) cannot be written to config.json', { found: 'ropeFreqFactors' });
  const variant = DECODER_VARIANTS[c.architecture];
  const hooks = variant.hooks ?? {};
  if (variant.normWeightsPlusOne && c.normWeightOffset !== 1) fail('UNSUPPORTED', 'Gemma norm weights stored as 1 + w (GGUF) cannot be written to an HF folder, which stores w', { expected: 1, found: c.normWeightOffset ?? 0 });
  if (!hooks.toHfSlidingWindow && c.slidingWindow !== undefined) fail('UNSUPPORTED', `sliding-window attention cannot be written to a ${c.architecture} config.json`, { found: c.slidingWindow });
  const out: HfJson = {
    architectures: [variant.hfClass],
    model_type: variant.hfModelTypes[0],
    hidden_size: c.hiddenSize,
    intermediate_size: c.intermediateSize,
    num_hidden_layers: c.numLayers,
    num_attention_heads: c.numHeads,
    num_key_value_heads: c.numKvHeads,
    head_dim: c.headDim,
    vocab_size: c.vocabSize,
    max_position_embeddings: c.maxSeqLen,
    rms_norm_eps: c.rmsNormEps,
    rope_theta: c.ropeTheta,
    [variant.hfActivationKey ?? 'hidden_act']: HF_ACTIVATIONS[variant.activation ?? 'silu'].name,
  };
  hooks.toHf?.(c, out);
  out.attention_bias = variant.hfAttentionBias === true;
  out.tie_word_embeddings = c.tieWordEmbeddings;
  hooks.toHfSlidingWindow?.(c, out);
  for (const s of variantScalars(c.architecture)) if (c[s.field] !== undefined) out[s.hf] = c[s.field];
  if (c.ropeDim !== undefined) out.partial_rotary_factor = c.ropeDim / c.headDim;
  if (c.noRopeLayerInterval !== undefined) {
    if (variant.noRopeLayerInterval === undefined) fail('UNSUPPORTED', `layers without RoPE cannot be written to a ${c.architecture} config.json`, { found: c.noRopeLayerInterval });
    out.no_rope_layer_interval = c.noRopeLayerInterval;
    out.no_rope_layers = Array.from({ length: c.numLayers }, (_, l) => (isRopeLayer(c, l) ? 1 : 0));
  }
  if (c.bosTokenId !== undefined) out.bos_token_id = c.bosTokenId;
  if (c.eosTokenIds !== undefined) out.eos_token_id = c.eosTokenIds.length === 1 ? c.eosTokenIds[0] : [...c.eosTokenIds];
  return { ...out, ...extra };
}








/** config.json for Moondream2 weights: HF's identification plus the MOON config keys. */
export function hfConfigFromMoondream(c: MoondreamConfig): HfJson {
  const { format: _format, ...sizes } = moondreamConfigToJson(c);
  return { architectures: ['HfMoondream'], model_type: 'moondream1', ...sizes };
}

/**
 * A decoder embedder's sentence-transformers Pooling module (1_Pooling/config.json) as
 * DecoderConfig.pooling: last token (Qwen3-Embedding) or mean; the other modes are UNSUPPORTED.
 */
function withSentencePooling(config: DecoderConfig, st: SentenceTransformersFiles, path: string | undefined): DecoderConfig {
  if (!st.pooling) return config;
  const f = new Fields(st.pooling, path);
  const modes: ('last' | 'mean')[] = [];
  if (f.bool('pooling_mode_lasttoken', false)) modes.push('last');
  if (f.bool('pooling_mode_mean_tokens', false)) modes.push('mean');
  for (const other of ['pooling_mode_cls_token', 'pooling_mode_max_tokens', 'pooling_mode_mean_sqrt_len_tokens', 'pooling_mode_weightedmean_tokens']) {
    if (f.bool(other, false)) f.fail('UNSUPPORTED', `sentence-transformers pooling '${other}' for a decoder`, { found: true });
  }
  if (modes.length !== 1) return f.fail('CONFIG_MISMATCH', 'exactly one pooling mode must be set', { expected: 'one of lasttoken, mean_tokens', found: modes });
  return { ...config, pooling: modes[0] };
}

/**
 * Whether an HF folder of a decoder whose family has yes/no rerankers (Qwen3ForCausalLM) is one
 * (Qwen3-Reranker, whose config.json says nothing of it): as llama.cpp's converter tells
 * (conversion/qwen.py, Qwen3Model._is_qwen3_reranker), a README heading or the model id
 * transformers saved as `_name_or_path` matching the family's marker; the folder's name is not
 * looked at. loadReranker's `kind: 'yes-no'` says it for a folder without either.
 */
function isYesNoRerankerFolder(dir: string, hf: HfJson, marker: RegExp): boolean {
  if (typeof hf._name_or_path === 'string' && marker.test(hf._name_or_path)) return true;
  const readme = nodePath.join(dir, 'README.md');
  if (!fs.existsSync(readme) || fs.statSync(readme).size > MAX_JSON_BYTES) return false;
  return fs.readFileSync(readme, 'utf8').split('\n').some((line) => /^#\s/.test(line) && marker.test(line));
}

/** The config reader of each family, for an HF config.json its registry entry claims (an mmproj's family has none: it is GGUF only). */
const CONFIG_FROM_HF: Partial<Record<Family, (hf: HfJson, st: SentenceTransformersFiles, path: string | undefined, entry: ArchitectureEntry) => ModelConfig>> = {
  decoder: (hf, st, path) => withSentencePooling(decoderConfigFromHf(hf, path), st, path),
  bert: (hf, st, path, entry) => (entry.modelClass === 'Reranker' ? bertClassifierConfigFromHfJson(hf, path) : bertConfigFromHfJson(hf, st, path)),
  gpt: (hf, _st, path) => tllmConfigFromHf(hf, path),
  moondream: (hf, _st, path) => moondreamConfigFromJson(hf, path),
};

/** Our config for any HF config.json: decoder, BERT, TLLM, Moondream or 'unknown'. */
export function modelConfigFromHf(hf: HfJson, st: SentenceTransformersFiles = {}, path?: string): ModelConfig {
  const entry = ARCHITECTURES.get(hfArchitecture(hf));
  const read = entry && CONFIG_FROM_HF[entry.family];
  return read ? read(hf, st, path, entry) : { architecture: 'unknown' };
}

/** Reads and parses a small JSON file; BAD_HEADER when it is not JSON (or not an object, when `object`). */
export function readJsonFile(path: string, object = true): unknown {
  const stat = fs.statSync(path);
  if (stat.size > MAX_JSON_BYTES) fail('BAD_HEADER', 'JSON file too large to be a config', { path, expected: `<= ${MAX_JSON_BYTES} bytes`, found: stat.size });
  const bytes = fs.readFileSync(path);
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch (cause) {
    return fail('BAD_HEADER', `not valid UTF-8 JSON: ${(cause as Error).message}`, { path });
  }
  if (object && !isObject(value)) fail('BAD_HEADER', 'the JSON is not an object', { path, expected: 'an object', found: Array.isArray(value) ? 'an array' : typeof value });
  return value;
}

function readOptionalJson(path: string, object = true): unknown {
  return fs.existsSync(path) ? readJsonFile(path, object) : undefined;
}

/** The sentence-transformers files of an HF folder (any may be absent). */
export function readSentenceTransformersFiles(dir: string): SentenceTransformersFiles {
  const modules = readOptionalJson(nodePath.join(dir, 'modules.json'), false);
  if (modules !== undefined && !Array.isArray(modules)) {
    fail('BAD_HEADER', 'modules.json is not a list', { path: nodePath.join(dir, 'modules.json'), expected: 'a list', found: typeof modules });
  }
  let poolingDir = '1_Pooling';
  if (Array.isArray(modules)) {
    const entry = modules.filter(isObject).find((m) => typeof m.type === 'string' && m.type.endsWith('models.Pooling'));
    if (entry && typeof entry.path === 'string') {
      // The pooling folder must stay inside the model folder.
      const resolved = nodePath.resolve(dir, entry.path);
      if (!resolved.startsWith(nodePath.resolve(dir) + nodePath.sep)) {
        fail('BAD_HEADER', 'modules.json points outside the model folder', { path: nodePath.join(dir, 'modules.json'), found: entry.path });
      }
      poolingDir = entry.path;
    }
  }
  return {
    modules,
    sentenceBert: readOptionalJson(nodePath.join(dir, 'sentence_bert_config.json')) as HfJson | undefined,
    pooling: readOptionalJson(nodePath.join(dir, poolingDir, 'config.json')) as HfJson | undefined,
  };
}

/** config.json of `dir` (if any) mapped to our config, with the raw JSON. */
export function readHfFolderConfig(dir: string): { config: ModelConfig; hf: HfJson } | undefined {
  const file = nodePath.join(dir, 'config.json');
  if (!fs.existsSync(file)) return undefined;
  const hf = readJsonFile(file) as HfJson;
  const st = ARCHITECTURES.get(hfArchitecture(hf))?.sentenceTransformers === true ? readSentenceTransformersFiles(dir) : {};
  const config = modelConfigFromHf(hf, st, file);
  if (isDecoderConfig(config)) {
    addGenerationStops(config, dir);
    const marker = retrievalOf(config)?.yesNo.marker;
    if (marker && config.pooling === undefined && isYesNoRerankerFolder(dir, hf, marker)) config.pooling = 'rank';
  }
  return { config, hf };
}

/**
 * generation_config.json's eos_token_id ids after config.json's: transformers' generate stops on
 * those (Llama 3 Instruct: 128009 in config.json, 128001 and 128009 there).
 */
function addGenerationStops(config: DecoderConfig, dir: string): void {
  const file = nodePath.join(dir, 'generation_config.json');
  if (!fs.existsSync(file)) return;
  const eos = (readJsonFile(file) as HfJson).eos_token_id;
  if (eos === undefined || eos === null) return;
  const ids = Array.isArray(eos) ? eos : [eos];
  if (!ids.every((id) => Number.isInteger(id) && id >= 0)) fail('CONFIG_MISMATCH', "generation_config.json's eos_token_id is not a token id or a list of them", { path: file, found: JSON.stringify(eos) });
  const all = [...(config.eosTokenIds ?? [])];
  for (const id of ids as number[]) if (!all.includes(id)) all.push(id);
  if (all.length > 0) config.eosTokenIds = all;
}

/** Canonical JSON text of our writers: two-space indent, trailing newline. */
export function jsonText(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

/** The configuration files of an HF folder for `config` ([path relative to the folder, text]); none for an unknown architecture. */
export function hfFolderConfigFiles(config: ModelConfig, extra: HfJson = {}): [string, string][] {
  if (isFamily(config, 'decoder')) return [['config.json', jsonText(hfConfigFromDecoder(config, extra))]];
  // A cross-encoder is a BERT whose head scores pairs: its config.json alone (no sentence-transformers modules).
  if (isFamily(config, 'bert') && architectureOf(config)?.modelClass === 'Reranker') {
    return [['config.json', jsonText({ ...hfConfigFromBertClassifier(config as unknown as BertClassifierConfig), ...extra })]];
  }
  if (isFamily(config, 'bert')) {
    const files = hfFilesFromBert(config);
    return [
      ['config.json', jsonText({ ...files.config, ...extra })],
      ['modules.json', jsonText(files.modules)],
      ['sentence_bert_config.json', jsonText(files.sentenceBert)],
      [nodePath.join('1_Pooling', 'config.json'), jsonText(files.pooling)],
    ];
  }
  const hf = isFamily(config, 'gpt') ? hfConfigFromTllm(config) : isFamily(config, 'moondream') ? hfConfigFromMoondream(config) : undefined;
  return hf ? [['config.json', jsonText({ ...hf, ...extra })]] : [];
}
