/**
 * sepweight trees (FORMATS.md §4): `<root>/start/<stem>.npy`, `<root>/mid/<i>/<stem>.npy`
 * (i decimal, 0-based, no padding), `<root>/end/<stem>.npy`, plus our root `config.json`
 * (HF style, with `rope_pairing` and `sepweight_key_scheme`).
 *
 * Key schemes (§4.2 table): 'hf' stems are HF keys without the `model.` / `model.layers.N.`
 * prefix; 'meta' stems are Meta Llama keys without `layers.N.`. Both map to the canonical decoder
 * names; the rotary inv_freq / rope.freqs buffers are skipped (recomputed from θ). A tree whose
 * config is not Llama/Qwen3 and whose files follow neither scheme reads as 'unknown' with names
 * `start/<stem>`, `mid/<i>/<stem>`, `end/<stem>`.
 *
 * Part specs (§4.4, half-open ranges): "f" = everything; a leading "b" = start/, a trailing "e" =
 * end/, tokens "a-b" = layers a..b-1 (with "b" the first range starts at 0). Only the folders a
 * spec names are listed or mapped; `mid/` itself is listed to count the layers.
 *
 * Without config.json the shapes decide (§4.5): hidden size and vocabulary from the embedding
 * or lm_head, layers from the mid/ folders, intermediate size from the gate rows, q/kv widths from
 * q/k rows; head_dim from q_norm when present (Qwen3), else 128. eps 1e-5, θ 10000,
 * max_position 2048, tied when end/ has no head, pairing 'half' for hf keys, 'interleaved' for meta.
 *
 * Writer: a decoder as an hf-scheme tree of f32 or f16 (.npy v1.0), q/k rows permuted into HF
 * order when the source pairs interleaved (recorded as 'half'); end/lm_head.weight.npy is always
 * written, as a copy of the embedding when tied, so that a node holding only end/ can compute
 * logits (config.json still says tie_word_embeddings). A llama2.c-style scored vocabulary is
 * written as tokenizer.bin, an ajc1 one as model.tokenizer with its model.template* files beside
 * it, and referenced from config.json. A llama2.c source's RoPE tables (its legacy freq_cis
 * blocks, metadata.ropeTables) go to start/freqs_cos.npy and start/freqs_sin.npy (float32), and
 * come back from there into metadata.ropeTables, so that .bin -> tree -> .bin is byte-identical.
 */
import * as fs from 'node:fs';
import * as nodePath from 'node:path';
import { rangeError, UnsupportedError } from '../../base/errors';
import { DECODER_NAMES, decoderTensorShapes, EXPERT_FIELDS, isDecoderArchitecture, isDecoderConfig, unheldFields, variantFields, variantNames, type DecoderConfig } from '../../architectures/decoder';
import type { ModelWeights, TensorView, TokenizerData } from '../../addon/weights';
import type { ModelConfig } from '../../architectures/model-config';
import { fail } from './bytes';
import { detectSepweight } from './magic';
import { decoderConfigFromHf, hfArchitecture, hfConfigFromDecoder, jsonText, readJsonFile, type HfJson } from './hf-config';
import { ajc1TemplateFiles, encodeAjc1Tokenizer, parseAjc1Tokenizer, readAjc1Templates, type Ajc1Templates } from './ajc1';
import { ropeTablesOf, type RopeTables } from './llama2c';
import { encodeLlama2cTokenizer, readLlama2cTokenizer } from '../vocabulary/llama2c-tokenizer';
import { mapNpy, npyFileSize, writeNpyFile, type NpyWritableDType } from './npy';
import { canonicalShape, FLOAT_READABLE_DTYPES } from '../quantization/tensor-data';
import type { FormatModule, Probe, ReadOptions, WriteOptions } from '../types';
import { lazy } from '../../base/lazy';

/** The writer's modules, loaded by the first write: reading needs none of them. */
const writing = lazy(() => ({
  ...(require('../writing/output-files') as typeof import('../writing/output-files')),
  ...(require('../vocabulary/vocab-convert') as typeof import('../vocabulary/vocab-convert')),
  ...(require('../writing/rope-order') as typeof import('../writing/rope-order')),
  ...(require('../writing/write-job') as typeof import('../writing/write-job')),
}));

// ---------------------------------------------------------------------------------------------
// Part specs

export interface PartSpec {
  /** "f": the whole tree. */
  full: boolean;
  begin: boolean;
  end: boolean;
  /** Half-open layer ranges [a, b), ascending and disjoint. */
  ranges: [number, number][];
}

/** Parses "f", "b 0-5", "7-12", "75-80 e", "0-5 50-55", "b", "e". RangeError for anything else. */
export function parsePartSpec(spec: string): PartSpec {
  const tokens = spec.trim().split(/\s+/).filter((t) => t.length > 0);
  const bad = (why: string): never => {
    throw rangeError(`invalid sepweight part spec ${JSON.stringify(spec)}: ${why} (examples: "f", "b 0-5", "7-12", "75-80 e")`);
  };
  if (tokens.length === 0) bad('it is empty');
  if (tokens.includes('f')) {
    if (tokens.length !== 1) bad('"f" stands alone');
    return { full: true, begin: true, end: true, ranges: [] };
  }
  const out: PartSpec = { full: false, begin: false, end: false, ranges: [] };
  tokens.forEach((t, i) => {
    if (t === 'b') {
      if (i !== 0) bad('"b" must come first');
      out.begin = true;
    } else if (t === 'e') {
      if (i !== tokens.length - 1) bad('"e" must come last');
      out.end = true;
    } else {
      const m = /^(0|[1-9][0-9]{0,8})-(0|[1-9][0-9]{0,8})$/.exec(t);
      if (!m) bad(`${JSON.stringify(t)} is not "b", "e" or a range "a-b"`);
      const a = Number(m![1]);
      const b = Number(m![2]);
      if (a >= b) bad(`range ${t} is empty (ranges are half-open)`);
      const prev = out.ranges[out.ranges.length - 1];
      if (prev && a < prev[1]) bad(`range ${t} overlaps or precedes ${prev[0]}-${prev[1]}`);
      out.ranges.push([a, b]);
    }
  });
  if (out.begin && out.ranges.length > 0 && out.ranges[0][0] !== 0) bad('with "b" the first range must start at 0');
  return out;
}

/** The layer indices a spec selects in a tree of `numLayers` layers (RangeError past the end). */
export function specLayers(spec: PartSpec, numLayers: number): number[] {
  if (spec.full) return Array.from({ length: numLayers }, (_, i) => i);
  const layers: number[] = [];
  for (const [a, b] of spec.ranges) {
    if (b > numLayers) throw rangeError(`part spec asks for layers ${a}-${b} but the tree has ${numLayers} layers`);
    for (let l = a; l < b; l++) layers.push(l);
  }
  return layers;
}

// ---------------------------------------------------------------------------------------------
// Key schemes

/**
 * The decoder fields beyond Llama's that the tree holds (no RoPE factors): the hf scheme's bias and
 * sink stems and experts, and what its config.json says (sliding windows, gpt-oss's YaRN and clamp).
 */
export const SEPWEIGHT_HOLDS: readonly string[] = [
  'qkNorm', 'qkvBias', ...EXPERT_FIELDS, 'expertBiases', 'swigluLimit', 'attentionSinks', 'attentionOutputBias', 'slidingWindow', 'slidingWindowPattern',
  'ropeYarnFactor', 'ropeYarnOriginalContext', 'ropeYarnBetaFast', 'ropeYarnBetaSlow', 'ropeAttentionFactor', 'ropeYarnUnroundedDims',
];

/**
 * A mixture of experts' hf-scheme stems (the same rule: the key after the layer index): its router
 * and each expert's matrices; gpt-oss's router bias and its experts' biases, stacked [experts, rows]
 * under weightmap's canonical names (one file per projection: HF's gate_up_proj_bias interleaves
 * gate and up, which no file of one tensor each can).
 */
const HF_EXPERT_STEM = /^mlp\.(gate\.(weight|bias)|experts\.(0|[1-9][0-9]*)\.(gate|up|down)_proj\.weight|experts\.(gate|up|down)_proj\.bias)$/;

export type KeyScheme = 'hf' | 'meta';
type Part = 'start' | 'mid' | 'end';

const HF_MID_STEMS = [
  'input_layernorm.weight',
  'self_attn.q_proj.weight',
  'self_attn.k_proj.weight',
  'self_attn.v_proj.weight',
  'self_attn.o_proj.weight',
  'self_attn.q_norm.weight',
  'self_attn.k_norm.weight',
  // Qwen2's and gpt-oss's biases, gpt-oss's sinks.
  'self_attn.q_proj.bias',
  'self_attn.k_proj.bias',
  'self_attn.v_proj.bias',
  'self_attn.o_proj.bias',
  'self_attn.sinks',
  'post_attention_layernorm.weight',
  'mlp.gate_proj.weight',
  'mlp.up_proj.weight',
  'mlp.down_proj.weight',
];

const META_MID: Record<string, (l: number) => string> = {
  'attention_norm.weight': DECODER_NAMES.attnNorm,
  'attention.wq.weight': DECODER_NAMES.q,
  'attention.wk.weight': DECODER_NAMES.k,
  'attention.wv.weight': DECODER_NAMES.v,
  'attention.wo.weight': DECODER_NAMES.o,
  'ffn_norm.weight': DECODER_NAMES.ffnNorm,
  'feed_forward.w1.weight': DECODER_NAMES.gate,
  'feed_forward.w3.weight': DECODER_NAMES.up,
  'feed_forward.w2.weight': DECODER_NAMES.down,
};

/** Buffers a tree may carry that the model recomputes. */
const SKIPPED: Record<KeyScheme, Record<Part, string[]>> = {
  hf: { start: [], mid: ['self_attn.rotary_emb.inv_freq'], end: [] },
  meta: { start: ['rope.freqs'], mid: [], end: [] },
};

/** Canonical name of a stem, null for a skipped buffer, undefined if the scheme has no such key. */
function canonicalName(scheme: KeyScheme, part: Part, stem: string, layer: number): string | null | undefined {
  if (SKIPPED[scheme][part].includes(stem)) return null;
  if (scheme === 'hf') {
    if (part === 'start') return stem === 'embed_tokens.weight' ? DECODER_NAMES.embed : undefined;
    if (part === 'end') return stem === 'norm.weight' ? DECODER_NAMES.norm : stem === 'lm_head.weight' ? DECODER_NAMES.lmHead : undefined;
    return HF_MID_STEMS.includes(stem) || HF_EXPERT_STEM.test(stem) ? `model.layers.${layer}.${stem}` : undefined;
  }
  if (part === 'start') return stem === 'tok_embeddings.weight' ? DECODER_NAMES.embed : undefined;
  if (part === 'end') return stem === 'norm.weight' ? DECODER_NAMES.norm : stem === 'output.weight' ? DECODER_NAMES.lmHead : undefined;
  return META_MID[stem]?.(layer);
}

/** start/ stems of the RoPE tables a llama2.c source carries (its legacy freq_cis blocks). */
const ROPE_TABLE_STEMS = { cos: 'freqs_cos', sin: 'freqs_sin' } as const;

/** Where a tree keeps an ajc1 source's `.tokenizer` (its `.template*` files beside it). */
const AJC1_TOKENIZER_FILE = 'model.tokenizer';

/** The stem (file name without .npy) of a canonical decoder name in the hf scheme. */
function hfStem(name: string): { part: Part; layer?: number; stem: string } {
  if (name === ROPE_TABLE_STEMS.cos || name === ROPE_TABLE_STEMS.sin) return { part: 'start', stem: name };
  if (name === DECODER_NAMES.embed) return { part: 'start', stem: 'embed_tokens.weight' };
  if (name === DECODER_NAMES.norm) return { part: 'end', stem: 'norm.weight' };
  if (name === DECODER_NAMES.lmHead) return { part: 'end', stem: 'lm_head.weight' };
  const m = /^model\.layers\.(\d+)\.(.+)$/.exec(name);
  if (!m) throw rangeError(`no sepweight path for '${name}'`);
  return { part: 'mid', layer: Number(m[1]), stem: m[2] };
}

// ---------------------------------------------------------------------------------------------
// Reading

interface FolderFile {
  part: Part;
  layer: number;
  stem: string;
  view: TensorView;
}

/** Lists the layer folders of mid/ (names only: the folders themselves are not opened). */
function countLayers(root: string): number {
  const mid = nodePath.join(root, 'mid');
  if (!fs.existsSync(mid)) return 0;
  const layers: number[] = [];
  for (const entry of fs.readdirSync(mid, { withFileTypes: true })) {
    if (entry.name.startsWith('.')) continue;
    if (!entry.isDirectory() || !/^(0|[1-9][0-9]*)$/.test(entry.name)) {
      fail('BAD_NAME', 'mid/ may only hold layer folders named 0, 1, 2, ...', { path: nodePath.join(mid, entry.name), expected: 'a decimal layer folder', found: entry.name });
    }
    layers.push(Number(entry.name));
  }
  layers.sort((a, b) => a - b);
  layers.forEach((l, i) => {
    if (l !== i) fail('MISSING_TENSOR', `mid/ has no folder for layer ${i}`, { path: mid, expected: `mid/${i}`, found: `mid/${l}` });
  });
  return layers.length;
}

/** Maps every .npy of one folder; `files` collects them even when a later one fails. */
function mapFolder(dir: string, part: Part, layer: number, files: FolderFile[]): void {
  if (!fs.existsSync(dir)) return;
  const entries = fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of entries) {
    if (entry.name.startsWith('.')) continue;
    const file = nodePath.join(dir, entry.name);
    if (!entry.isFile() || !entry.name.endsWith('.npy') || entry.name.length === 4) {
      fail('BAD_NAME', 'a sepweight folder holds only <stem>.npy files', { path: file, expected: '<stem>.npy', found: entry.name });
    }
    const stem = entry.name.slice(0, -4);
    files.push({ part, layer, stem, view: mapNpy(file, stem) });
  }
}

function detectScheme(files: FolderFile[]): KeyScheme | undefined {
  for (const f of files) {
    const hf = canonicalName('hf', f.part, f.stem, f.layer);
    const meta = canonicalName('meta', f.part, f.stem, f.layer);
    if (hf && !meta) return 'hf';
    if (meta && !hf) return 'meta';
  }
  return undefined;
}

function decoderConfigOf(root: string, hf: HfJson | undefined, scheme: KeyScheme, files: FolderFile[], numLayers: number): DecoderConfig {
  const configPath = nodePath.join(root, 'config.json');
  if (hf) {
    const json = { ...hf };
    if (json.rope_pairing === undefined && scheme === 'meta') json.rope_pairing = 'interleaved';
    const config = decoderConfigFromHf(json, configPath);
    if (config.numLayers !== numLayers) {
      fail('CONFIG_MISMATCH', 'num_hidden_layers disagrees with the mid/ folders', { path: configPath, expected: numLayers, found: config.numLayers });
    }
    return config;
  }
  // §4.5: infer what the loaded shapes allow.
  const shapeOf = (name: (l: number) => string) => {
    for (const f of files) {
      if (f.part !== 'mid') continue;
      if (canonicalName(scheme, 'mid', f.stem, f.layer) === name(f.layer)) return canonicalShape(f.view);
    }
    return undefined;
  };
  const byName = (name: string) => {
    const f = files.find((x) => x.part !== 'mid' && canonicalName(scheme, x.part, x.stem, x.layer) === name);
    return f ? canonicalShape(f.view) : undefined;
  };
  const table = byName(DECODER_NAMES.embed) ?? byName(DECODER_NAMES.lmHead);
  const need = (v: number | undefined, what: string): number =>
    v !== undefined && v > 0 ? v : fail('CONFIG_MISMATCH', `without config.json the ${what} cannot be inferred from the parts loaded`, { path: root, expected: 'config.json', found: 'absent' });
  const hiddenSize = need(table?.[1] ?? shapeOf(DECODER_NAMES.attnNorm)?.[0], 'hidden size');
  const vocabSize = need(table?.[0], 'vocabulary size (load start/ or end/)');
  const qNorm = shapeOf(DECODER_NAMES.qNorm);
  const headDim = qNorm?.[0] ?? 128;
  const qRows = shapeOf(DECODER_NAMES.q)?.[0] ?? hiddenSize;
  const kvRows = shapeOf(DECODER_NAMES.k)?.[0] ?? qRows;
  if (qRows % headDim !== 0 || kvRows % headDim !== 0) {
    fail('CONFIG_MISMATCH', `without config.json the head dim defaults to ${headDim}, which does not divide the q/k widths`, { path: root, expected: `multiples of ${headDim}`, found: [qRows, kvRows] });
  }
  const loadedEnd = files.some((f) => f.part === 'end');
  const head = byName(DECODER_NAMES.lmHead);
  return {
    architecture: qNorm ? 'qwen3' : 'llama',
    hiddenSize,
    intermediateSize: need(shapeOf(DECODER_NAMES.gate)?.[0], 'intermediate size (load a layer)'),
    numLayers,
    numHeads: qRows / headDim,
    numKvHeads: kvRows / headDim,
    headDim,
    vocabSize,
    maxSeqLen: 2048,
    rmsNormEps: 1e-5,
    ropeTheta: 10000,
    ropePairing: scheme === 'hf' ? 'half' : 'interleaved',
    tieWordEmbeddings: !(loadedEnd && head),
    qkNorm: qNorm !== undefined,
  };
}

function validateDecoder(root: string, config: DecoderConfig, tensors: TensorView[], begin: boolean, layers: number[], end: boolean): void {
  const have = new Map(tensors.map((t) => [t.name, t]));
  const wanted = new Set<string>();
  if (begin) wanted.add(DECODER_NAMES.embed);
  const layerPrefixes = new Set(layers.map((l) => `model.layers.${l}.`));
  if (end) wanted.add(DECODER_NAMES.norm);
  for (const spec of decoderTensorShapes(config)) {
    const inLayer = /^model\.layers\.\d+\./.exec(spec.name);
    if (inLayer && layerPrefixes.has(inLayer[0])) wanted.add(spec.name);
    if (spec.name === DECODER_NAMES.lmHead && end) wanted.add(spec.name);
  }
  if (end && !begin && !have.has(DECODER_NAMES.lmHead)) {
    fail('MISSING_TENSOR', 'end/ has no lm_head and the tied embedding (start/) is not loaded', { path: nodePath.join(root, 'end'), expected: 'lm_head.weight.npy', found: 'absent' });
  }
  const shapes = new Map(decoderTensorShapes({ ...config, tieWordEmbeddings: false }).map((s) => [s.name, s.shape]));
  for (const name of wanted) {
    if (!have.has(name)) fail('MISSING_TENSOR', `the tree has no file for '${name}'`, { path: root, expected: name, found: 'absent' });
  }
  for (const t of tensors) {
    const shape = shapes.get(t.name);
    if (!shape) {
      fail('BAD_NAME', `'${t.name}' is not part of a ${config.architecture} model`, { path: t.source.path, found: t.name });
    }
    const got = canonicalShape(t);
    if (got.length !== shape.length || got.some((v, i) => v !== shape[i])) {
      fail('SHAPE_MISMATCH', `'${t.name}' disagrees with the config`, { path: t.source.path, expected: shape, found: got });
    }
    if (t.dtype !== 'f32' && t.dtype !== 'f16') {
      fail('BAD_DTYPE', `'${t.name}' is ${t.dtype}; decoder weights are float32 or float16`, { path: t.source.path, expected: 'f32 | f16', found: t.dtype });
    }
  }
}

/**
 * The tokenizer config.json points at (a llama2.c tokenizer.bin, or an ajc1 `.tokenizer` whose
 * `.template*` files sit beside it), or tokenizer.bin at the root.
 */
async function treeTokenizer(root: string, hf: HfJson | undefined, vocabSize: number, vocabulary: boolean): Promise<{ tokenizer?: TokenizerData; templates?: Ajc1Templates }> {
  const entry = hf?.tokenizer;
  let file: string | undefined;
  let ajc1 = false;
  if (typeof entry === 'object' && entry !== null && typeof (entry as HfJson).path === 'string') {
    const format = (entry as HfJson).format;
    ajc1 = typeof format === 'string' && format.toLowerCase().startsWith('ajc1');
    if (typeof format === 'string' && !ajc1 && !format.toLowerCase().startsWith('llama2.c')) return {};
    file = nodePath.resolve(root, (entry as HfJson).path as string);
  } else if (fs.existsSync(nodePath.join(root, 'tokenizer.bin'))) {
    file = nodePath.join(root, 'tokenizer.bin');
  }
  if (!file || !fs.existsSync(file) || !fs.statSync(file).isFile()) return {};
  if (!ajc1) return vocabulary ? { tokenizer: readLlama2cTokenizer(file, vocabSize) } : {};
  const templates = await readAjc1Templates(file.replace(/\.tokenizer$/, ''));
  return {
    ...(vocabulary ? { tokenizer: parseAjc1Tokenizer(fs.readFileSync(file), file, vocabSize) } : {}),
    ...(Object.keys(templates).length ? { templates } : {}),
  };
}

async function read(root: string, options: ReadOptions = {}): Promise<ModelWeights> {
  const spec = parsePartSpec(options.parts ?? 'f');
  if (!fs.statSync(root).isDirectory()) fail('BAD_HEADER', 'a sepweight tree is a folder', { path: root, expected: 'a folder', found: 'a file' });
  const configPath = nodePath.join(root, 'config.json');
  const hf = fs.existsSync(configPath) ? (readJsonFile(configPath) as HfJson) : undefined;
  const numLayers = countLayers(root);
  const layers = specLayers(spec, numLayers);
  const files: FolderFile[] = [];
  try {
    if (spec.begin) mapFolder(nodePath.join(root, 'start'), 'start', -1, files);
    for (const l of layers) mapFolder(nodePath.join(root, 'mid', String(l)), 'mid', l, files);
    if (spec.end) mapFolder(nodePath.join(root, 'end'), 'end', -1, files);

    const declared = hf?.sepweight_key_scheme;
    if (declared !== undefined && declared !== 'hf' && declared !== 'meta') {
      fail('CONFIG_MISMATCH', "sepweight_key_scheme must be 'hf' or 'meta'", { path: configPath, expected: 'hf | meta', found: declared });
    }
    const arch = hf ? hfArchitecture(hf) : undefined;
    const scheme = (declared as KeyScheme | undefined) ?? detectScheme(files);
    const metadata: Record<string, unknown> = {
      parts: { spec: options.parts ?? 'f', begin: spec.begin, end: spec.end, layers },
      ...(hf ? { config: hf } : {}),
    };
    const sources = files.map((f) => f.view.source);

    if (scheme === undefined || (hf && !(isDecoderArchitecture(arch) && unheldFields(variantFields(arch, 1), SEPWEIGHT_HOLDS).length === 0))) {
      const tensors = files.map((f) => ({ ...f.view, name: f.part === 'mid' ? `mid/${f.layer}/${f.stem}` : `${f.part}/${f.stem}` }));
      const config: ModelConfig = { architecture: 'unknown' };
      return { format: 'sepweight', path: root, architecture: 'unknown', config, tensors, metadata, sources };
    }
    metadata.keyScheme = scheme;
    const tensors: TensorView[] = [];
    const tables: Partial<RopeTables> = {};
    for (const f of files) {
      if (f.part === 'start' && (f.stem === ROPE_TABLE_STEMS.cos || f.stem === ROPE_TABLE_STEMS.sin)) {
        tables[f.stem === ROPE_TABLE_STEMS.cos ? 'cos' : 'sin'] = { ...f.view, name: f.stem };
        continue;
      }
      const name = canonicalName(scheme, f.part, f.stem, f.layer);
      if (name === null) continue;
      if (name === undefined) {
        fail('BAD_NAME', `'${f.stem}' is not a ${scheme}-scheme key of ${f.part}/`, { path: f.view.source.path, found: f.stem });
      }
      tensors.push({ ...f.view, name });
    }
    const config = decoderConfigOf(root, hf, scheme, files, numLayers);
    validateDecoder(root, config, tensors, spec.begin, layers, spec.end);
    if (tables.cos && tables.sin) metadata.ropeTables = tables;
    const { tokenizer, templates } = await treeTokenizer(root, hf, config.vocabSize, options.vocabulary !== false);
    if (templates) metadata.templates = templates;
    return { format: 'sepweight', path: root, architecture: config.architecture, config, tensors, metadata, ...(tokenizer ? { tokenizer } : {}), sources };
  } catch (error) {
    for (const f of files) f.view.source.close();
    throw error;
  }
}

// ---------------------------------------------------------------------------------------------
// Writing

async function write(weights: ModelWeights, root: string, options: WriteOptions = {}): Promise<void> {
  const { ajc1Vocabulary, hfTokenizerFiles, llama2cVocabulary, permutedRowChunks, qkRowSources, requireTensor, tensorsByName, writeOutputs, writeSynced } = writing();
  const c = weights.config;
  if (!isDecoderConfig(c)) throw new UnsupportedError(`sepweight trees are written for ${variantNames(SEPWEIGHT_HOLDS)} decoders, not ${c.architecture}`);
  const unheld = unheldFields(c, SEPWEIGHT_HOLDS);
  if (unheld.length > 0) throw new UnsupportedError(`sepweight trees hold no ${unheld.join(', ')} (this ${c.architecture} model has them)`);
  const byName = tensorsByName(weights);
  const specs = decoderTensorShapes({ ...c, tieWordEmbeddings: false }).filter((s) => s.name !== DECODER_NAMES.lmHead || !c.tieWordEmbeddings || byName.has(s.name));
  const plan = specs.map((s) => ({ ...s, view: requireTensor(weights, byName, s.name, s.shape, FLOAT_READABLE_DTYPES) }));
  if (c.tieWordEmbeddings && !byName.has(DECODER_NAMES.lmHead)) {
    // The end node's copy of the tied head.
    plan.push({ name: DECODER_NAMES.lmHead, shape: [c.vocabSize, c.hiddenSize], view: byName.get(DECODER_NAMES.embed)! });
  }
  const dtype: NpyWritableDType = options.dtype ?? (plan.every((p) => p.view.dtype === 'f16') ? 'f16' : 'f32');
  const config: DecoderConfig = { ...c, ropePairing: 'half' };

  const extra: HfJson = { torch_dtype: dtype === 'f32' ? 'float32' : 'float16', sepweight_key_scheme: 'hf', rope_pairing: 'half' };
  const tokenizer = llama2cVocabulary(weights) ?? (await ajc1Vocabulary(weights, c.vocabSize));
  const ajc1 = tokenizer?.style === 'ajc1';
  if (tokenizer) {
    extra.tokenizer = {
      format: ajc1 ? 'ajc1 .tokenizer' : 'llama2.c tokenizer.bin',
      path: ajc1 ? AJC1_TOKENIZER_FILE : 'tokenizer.bin',
      vocab_size: tokenizer.tokens.length,
      ...(tokenizer.bosId !== undefined ? { bos_token_id: tokenizer.bosId } : {}),
      ...(tokenizer.eosId !== undefined ? { eos_token_id: tokenizer.eosId } : {}),
    };
  }
  // A llama2.c source's RoPE tables go to start/ (f32 whatever the dtype), for the way back.
  const tables = ropeTablesOf(weights, c.maxSeqLen, c.headDim / 2);
  if (tables) {
    plan.push({ name: ROPE_TABLE_STEMS.cos, shape: tables.cos.shape, view: tables.cos }, { name: ROPE_TABLE_STEMS.sin, shape: tables.sin.shape, view: tables.sin });
  }
  const fileDtype = (name: string): NpyWritableDType => (name === ROPE_TABLE_STEMS.cos || name === ROPE_TABLE_STEMS.sin ? 'f32' : dtype);

  const totalBytes = plan.reduce((a, p) => a + npyFileSize(fileDtype(p.name), p.shape), 0);
  const hfFiles = await hfTokenizerFiles(weights);
  // The tree is built in a temporary folder beside `root` and renamed into place when complete.
  await writeOutputs(weights, options, async (out) => {
    const tree = out.folder(root);
    let done = 0;
    for (const p of plan) {
      const where = hfStem(p.name);
      const dir = where.part === 'mid' ? nodePath.join(tree, 'mid', String(where.layer)) : nodePath.join(tree, where.part);
      fs.mkdirSync(dir, { recursive: true });
      const offset = done;
      const fileOptions: WriteOptions = {
        ...options,
        onProgress: options.onProgress && ((pr) => options.onProgress!({ bytesWritten: offset + pr.bytesWritten, totalBytes, tensor: p.name })),
      };
      const rows = qkRowSources(c, p.name, 'half');
      const view = { ...p.view, name: p.name };
      await writeNpyFile(nodePath.join(dir, `${where.stem}.npy`), view, fileDtype(p.name), fileOptions, rows ? permutedRowChunks(view, rows) : undefined);
      done += npyFileSize(fileDtype(p.name), p.shape);
    }
    if (tokenizer && ajc1) {
      const file = nodePath.join(tree, AJC1_TOKENIZER_FILE);
      await writeSynced(file, await encodeAjc1Tokenizer(tokenizer, c.bosTokenId, c.eosTokenIds?.[0]));
      for (const [name, text] of ajc1TemplateFiles(file.replace(/\.tokenizer$/, ''), weights.metadata.templates as Ajc1Templates | undefined)) {
        await writeSynced(name, text);
      }
    } else if (tokenizer) {
      await writeSynced(nodePath.join(tree, 'tokenizer.bin'), encodeLlama2cTokenizer(tokenizer));
    }
    // The files an HF folder would hold (tokenizer.json, tokenizer_config.json with the chat template), at the root.
    for (const [name, data] of hfFiles) if (!fs.existsSync(nodePath.join(tree, name))) await writeSynced(nodePath.join(tree, name), data);
    await writeSynced(nodePath.join(tree, 'config.json'), jsonText(hfConfigFromDecoder(config, extra)));
  });
}

export const sepweightFormat: FormatModule = {
  name: 'sepweight',
  title: 'sepweight tree (llm_sepweight .npy)',
  detect: detectSepweight,
  read,
  write,
};
