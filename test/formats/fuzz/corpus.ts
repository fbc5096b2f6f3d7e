/**
 * The structured fuzz corpus, per format: every count, size, offset and dimension field of a
 * fixture set to the values that broke readers before (2^31−1, 2^31, 2^32−1, 2^63, −1, 0),
 * truncation at every region boundary (and one byte either side), config.json and tokenizer.json
 * value edits; plus seeded random byte mutations. Fields are located by walking the fixture
 * files here, independently of the readers under test.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fixture } from '../../helpers/fixtures';
import type { Edit, FuzzCase } from './edits';

/** Values written into integer fields of every width (two's complement for the negatives). */
const HOSTILE = ['2147483647', '2147483648', '4294967295', '9223372036854775808', '-1', '0'];
/** Raw JSON values for numeric config / tokenizer keys. */
const HOSTILE_JSON = ['2147483647', '2147483648', '4294967295', '9223372036854775808', '-1', '0', '1.5', '1e300', '"x"', 'null', '[]'];

interface Field {
  name: string;
  offset: number;
  width: 1 | 2 | 4 | 8;
}

interface Layout {
  fields: Field[];
  /** Offsets where a region (header, record, section, tensor) begins. */
  boundaries: number[];
}

function fieldCases(base: Omit<FuzzCase, 'edit'>, file: string, layout: Layout): FuzzCase[] {
  const cases: FuzzCase[] = [];
  for (const f of layout.fields) {
    const values = f.width === 1 ? ['255', '128', '0'] : f.width === 2 ? ['65535', '32768', '0'] : HOSTILE;
    for (const value of values) cases.push({ ...base, edit: { kind: 'int', file, field: f.name, offset: f.offset, width: f.width, value } });
  }
  const size = fs.statSync(fs.statSync(base.source).isDirectory() ? path.join(base.source, file) : base.source).size;
  const lengths = new Set<number>();
  for (const b of [0, ...layout.boundaries, size]) for (const d of [-1, 0, 1]) if (b + d >= 0 && b + d < size) lengths.add(b + d);
  for (const length of [...lengths].sort((a, b) => a - b)) cases.push({ ...base, edit: { kind: 'truncate', file, region: `boundary near ${length}`, length } });
  return cases;
}

// ---- field walkers ----------------------------------------------------------------------------

function tllmLayout(b: Buffer): Layout {
  const names = ['model_dim', 'num_layers', 'num_heads', 'ffn_hidden_dim', 'max_sequence_length', 'vocab_size'];
  const fields: Field[] = names.map((name, i) => ({ name, offset: 8 + 4 * i, width: 4 }));
  const [d, L, , f, S, V] = names.map((_, i) => b.readInt32LE(8 + 4 * i));
  const ranks: number[][] = [[V, d], [S, d]];
  for (let l = 0; l < L; l++) ranks.push([d, d], [d, d], [d, d], [d, d], [d, f], [f], [f, d], [d], [d], [d], [d], [d]);
  ranks.push([d, V]);
  const boundaries = [36];
  let at = 36;
  ranks.forEach((dims, r) => {
    dims.forEach((_, i) => fields.push({ name: `record ${r} dim ${i}`, offset: at + 8 * i, width: 8 }));
    at += 8 * dims.length;
    boundaries.push(at);
    at += 4 * dims.reduce((x, y) => x * y, 1);
    boundaries.push(at);
  });
  return { fields, boundaries };
}

function moonLayout(b: Buffer): Layout {
  const fields: Field[] = [];
  const boundaries = [8];
  let at = 8;
  while (at + 12 <= b.length) {
    const nameLength = b.readUInt32LE(at);
    const rank = b.readUInt32LE(at + 4);
    const count = b.readUInt32LE(at + 8);
    const name = b.toString('latin1', at + 12, at + 12 + nameLength);
    fields.push({ name: `${name} name_length`, offset: at, width: 4 }, { name: `${name} rank`, offset: at + 4, width: 4 }, { name: `${name} data_length`, offset: at + 8, width: 4 });
    const dims = at + 12 + nameLength;
    for (let i = 0; i < rank; i++) fields.push({ name: `${name} dim ${i}`, offset: dims + 8 * i, width: 8 });
    at = dims + 8 * rank;
    boundaries.push(at);
    at += 2 * count;
    boundaries.push(at);
  }
  return { fields, boundaries };
}

function embdLayout(b: Buffer): Layout {
  const header: [string, number, 4 | 8][] = [
    ['flags', 8, 4], ['metadata_offset', 12, 4], ['metadata_size', 16, 4], ['vocab_offset', 20, 4], ['vocab_size', 24, 4],
    ['tensor_index_offset', 28, 4], ['tensor_index_count', 32, 4], ['tensor_data_offset', 36, 4], ['tensor_data_size', 40, 8], ['total_file_size', 48, 8],
  ];
  const fields: Field[] = header.map(([name, offset, width]) => ({ name, offset, width }));
  const mo = b.readUInt32LE(12);
  const vo = b.readUInt32LE(20);
  const tio = b.readUInt32LE(28);
  const count = b.readUInt32LE(32);
  const tdo = b.readUInt32LE(36);
  fields.push({ name: 'metadata entry_count', offset: mo, width: 4 }, { name: 'metadata total_size', offset: mo + 4, width: 4 });
  // The first metadata entries' key and value lengths.
  let at = mo + 8;
  for (let i = 0; i < 4; i++) {
    fields.push({ name: `metadata ${i} key_length`, offset: at, width: 2 }, { name: `metadata ${i} value_length`, offset: at + 2, width: 2 });
    at += 4 + b.readUInt16LE(at) + b.readUInt16LE(at + 2);
  }
  if (vo) fields.push({ name: 'token_count', offset: vo, width: 4 }, { name: 'vocab total_size', offset: vo + 4, width: 4 }, { name: 'special_tokens', offset: vo + 8, width: 4 });
  for (const i of [0, 1, Math.floor(count / 2), count - 1]) {
    const d = tio + 32 * i;
    fields.push({ name: `descriptor ${i} ndim`, offset: d + 5, width: 1 }, { name: `descriptor ${i} name_length`, offset: d + 6, width: 2 });
    for (let k = 0; k < 4; k++) fields.push({ name: `descriptor ${i} shape[${k}]`, offset: d + 8 + 4 * k, width: 4 });
    fields.push({ name: `descriptor ${i} data_offset`, offset: d + 24, width: 8 });
  }
  return { fields, boundaries: [64, mo, mo + 8, vo, tio, tio + 32 * count, tdo, b.length - 16] };
}

function ajc1Layout(): Layout {
  const names = ['dim', 'hidden_dim', 'n_layers', 'n_heads', 'n_kv_heads', 'vocab_size', 'max_seq_len', 'head_dim', 'shared_classifier', 'group_size'];
  return { fields: names.map((name, i) => ({ name, offset: 8 + 4 * i, width: 4 })), boundaries: [8, 0x30, 256] };
}

function llama2cLayout(b: Buffer): Layout {
  const names = ['dim', 'hidden_dim', 'n_layers', 'n_heads', 'n_kv_heads', 'vocab_size', 'seq_len'];
  const [d, h, L, , kv, V] = names.map((_, i) => Math.abs(b.readInt32LE(4 * i)));
  const hs = d / b.readInt32LE(12);
  const sizes = [V * d, L * d, L * d * d, L * kv * hs * d, L * kv * hs * d, L * d * d, L * d, L * h * d, L * d * h, L * h * d, d];
  const boundaries = [28];
  let at = 28;
  for (const n of sizes) boundaries.push((at += 4 * n));
  return { fields: names.map((name, i) => ({ name, offset: 4 * i, width: 4 })), boundaries };
}

/** GGUF: the counts, every key's length and type, array counts, and every tensor info's fields. */
function ggufLayout(b: Buffer): Layout {
  const fields: Field[] = [{ name: 'tensor_count', offset: 8, width: 8 }, { name: 'kv_count', offset: 16, width: 8 }];
  const boundaries = [24];
  const nTensors = Number(b.readBigUInt64LE(8));
  const nKv = Number(b.readBigUInt64LE(16));
  const sizes: Record<number, number> = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };
  let at = 24;
  const skipValue = (type: number, name: string, record: boolean): void => {
    if (type === 8) {
      if (record) fields.push({ name: `${name} length`, offset: at, width: 8 });
      at += 8 + Number(b.readBigUInt64LE(at));
    } else if (type === 9) {
      const elem = b.readUInt32LE(at);
      fields.push({ name: `${name} element type`, offset: at, width: 4 }, { name: `${name} count`, offset: at + 4, width: 8 });
      const n = Number(b.readBigUInt64LE(at + 4));
      at += 12;
      for (let i = 0; i < n; i++) skipValue(elem, `${name}[${i}]`, i < 2 || i === n - 1);
    } else {
      at += sizes[type];
    }
  };
  for (let i = 0; i < nKv; i++) {
    boundaries.push(at);
    const keyLength = Number(b.readBigUInt64LE(at));
    const key = b.toString('utf8', at + 8, at + 8 + keyLength);
    fields.push({ name: `key ${key} length`, offset: at, width: 8 });
    at += 8 + keyLength;
    const type = b.readUInt32LE(at);
    fields.push({ name: `${key} type`, offset: at, width: 4 });
    at += 4;
    skipValue(type, key, true);
  }
  for (let i = 0; i < nTensors; i++) {
    boundaries.push(at);
    const nameLength = Number(b.readBigUInt64LE(at));
    const name = b.toString('utf8', at + 8, at + 8 + nameLength);
    fields.push({ name: `${name} name length`, offset: at, width: 8 });
    at += 8 + nameLength;
    const dims = b.readUInt32LE(at);
    fields.push({ name: `${name} n_dims`, offset: at, width: 4 });
    at += 4;
    for (let d = 0; d < dims; d++) fields.push({ name: `${name} dim ${d}`, offset: at + 8 * d, width: 8 });
    at += 8 * dims;
    fields.push({ name: `${name} type`, offset: at, width: 4 }, { name: `${name} offset`, offset: at + 4, width: 8 });
    at += 12;
  }
  boundaries.push(at);
  return { fields, boundaries };
}

function npyLayout(b: Buffer): Layout {
  const n = b.readUInt16LE(8);
  return { fields: [{ name: 'header_len', offset: 8, width: 2 }], boundaries: [6, 8, 10, 10 + n] };
}

function npyShapeCases(base: Omit<FuzzCase, 'edit'>, file: string, rank: number): FuzzCase[] {
  const out: FuzzCase[] = [];
  for (let dim = 0; dim < rank; dim++) for (const value of ['2147483647', '2147483648', '4294967295', '9223372036854775808', '-1', '0']) out.push({ ...base, edit: { kind: 'npy-shape', file, dim, value } });
  return out;
}

function jsonCases(base: Omit<FuzzCase, 'edit'>, file: string, keys: (string | number)[][], values = HOSTILE_JSON): FuzzCase[] {
  return keys.flatMap((key) => values.map((raw) => ({ ...base, edit: { kind: 'json', file, sets: [[key, raw]] } as Edit })));
}

function numericKeys(jsonFile: string): string[][] {
  const json = JSON.parse(fs.readFileSync(jsonFile, 'utf8')) as Record<string, unknown>;
  return Object.entries(json).filter(([, v]) => typeof v === 'number').map(([k]) => [k]);
}

// ---- targets ----------------------------------------------------------------------------------

const F = {
  tllm: fixture('tllm-tiny', 'model.tllm'),
  moon: fixture('moon-tiny', 'model.moon'),
  moonConfig: fixture('moon-tiny', 'config.json'),
  embd: fixture('embd-minilm-tiny', 'model.weights'),
  ajc1: fixture('ajc1-qwen3-tiny', 'model.bin'),
  llama2c: fixture('llama-stories260k', 'stories260K.bin'),
  gguf: fixture('llama-stories260k', 'stories260K.gguf'),
  sepweight: fixture('llama-stories260k', 'sepweight'),
  minilm: fixture('tokenizers', 'minilm'),
};

const single = (target: string, source: string, format: string, extra: Partial<FuzzCase> = {}): Omit<FuzzCase, 'edit'> => ({
  target,
  source,
  entry: path.basename(source),
  operation: 'read',
  options: { format },
  ...extra,
});

/**
 * The structured corpus. `hfFolder` is an HF folder (model.safetensors + config.json) made by the
 * caller from a fixture, since the fixtures hold none.
 */
export function structuredCorpus(hfFolder: string): FuzzCase[] {
  const read = (f: string) => fs.readFileSync(f);
  const cases: FuzzCase[] = [];
  const add = (list: FuzzCase[]) => cases.push(...list);

  add(fieldCases(single('tllm', F.tllm, 'tllm'), 'model.tllm', tllmLayout(read(F.tllm))));

  const moon = single('moon', F.moon, 'moon', { sidecars: [F.moonConfig] });
  add(fieldCases(moon, 'model.moon', moonLayout(read(F.moon))));
  add(jsonCases({ ...moon, target: 'moon config.json' }, 'config.json', numericKeys(F.moonConfig)));

  add(fieldCases(single('embd', F.embd, 'embd'), 'model.weights', embdLayout(read(F.embd))));
  add(fieldCases(single('embd (checksums off)', F.embd, 'embd', { options: { format: 'embd', verifyChecksums: false } }), 'model.weights', embdLayout(read(F.embd))));

  add(fieldCases(single('ajc1', F.ajc1, 'ajc1'), 'model.bin', ajc1Layout()));
  add(fieldCases(single('llama2c', F.llama2c, 'llama2c'), 'stories260K.bin', llama2cLayout(read(F.llama2c))));
  add(fieldCases(single('gguf', F.gguf, 'gguf'), 'stories260K.gguf', ggufLayout(read(F.gguf))));

  const npyFile = path.join(F.sepweight, 'mid', '0', 'self_attn.q_proj.weight.npy');
  const npy = single('npy', npyFile, 'npy');
  add(fieldCases(npy, path.basename(npyFile), npyLayout(read(npyFile))));
  add(npyShapeCases(npy, path.basename(npyFile), 2));

  const tree = { target: 'sepweight', source: F.sepweight, entry: '.', operation: 'read' as const, options: { format: 'sepweight' } };
  const upProj = path.join('mid', '1', 'mlp.up_proj.weight.npy');
  add(fieldCases(tree, upProj, npyLayout(read(path.join(F.sepweight, upProj)))));
  add(npyShapeCases(tree, upProj, 2));
  add(jsonCases({ ...tree, target: 'sepweight config.json' }, 'config.json', numericKeys(path.join(F.sepweight, 'config.json'))));

  const hf = { target: 'safetensors', source: hfFolder, entry: '.', operation: 'read' as const, options: { format: 'safetensors' } };
  const st = read(path.join(hfFolder, 'model.safetensors'));
  const headerLength = Number(st.readBigUInt64LE(0));
  const header = JSON.parse(st.toString('utf8', 8, 8 + headerLength)) as Record<string, { shape: number[]; data_offsets: number[] }>;
  add(fieldCases(hf, 'model.safetensors', { fields: [{ name: 'header length', offset: 0, width: 8 }], boundaries: [8, 8 + headerLength] }));
  const names = Object.keys(header).filter((k) => k !== '__metadata__');
  for (const name of [names[0], names[Math.floor(names.length / 2)], names[names.length - 1]]) {
    const keys: (string | number)[][] = [...header[name].shape.map((_, i) => [name, 'shape', i]), [name, 'data_offsets', 0], [name, 'data_offsets', 1]];
    for (const key of keys) {
      for (const raw of HOSTILE_JSON) cases.push({ ...hf, edit: { kind: 'safetensors-json', file: 'model.safetensors', sets: [[key, raw]] } });
    }
  }
  add(jsonCases({ ...hf, target: 'safetensors config.json' }, 'config.json', numericKeys(path.join(hfFolder, 'config.json'))));

  add(tokenizerJsonCases());
  return cases;
}

/** tokenizer.json (MiniLM's WordPiece) value edits: the vocabulary's shape, ids, added tokens. */
function tokenizerJsonCases(): FuzzCase[] {
  const base = { target: 'tokenizer.json', source: F.minilm, entry: 'tokenizer.json', operation: 'tokenizer' as const };
  const json = JSON.parse(fs.readFileSync(path.join(F.minilm, 'tokenizer.json'), 'utf8'));
  const tokens = Object.keys(json.model.vocab);
  const cases: FuzzCase[] = [];
  const set = (sets: [(string | number)[], string][]) => cases.push({ ...base, edit: { kind: 'json', file: 'tokenizer.json', sets } });
  for (const raw of ['null', '[]', '"x"', '5']) set([[['model', 'vocab'], raw]]);
  for (const token of [tokens[0], '[UNK]', tokens[tokens.length - 1]]) {
    for (const raw of [...HOSTILE_JSON, '9007199254740992']) set([[['model', 'vocab', token], raw]]);
  }
  for (const raw of [...HOSTILE_JSON, '9007199254740992']) set([[['added_tokens', 0, 'id'], raw]]);
  set([[['added_tokens', 0, 'content'], '5']]);
  set([[['added_tokens'], '{}']]);
  // 500 tokens sharing one id.
  set(tokens.slice(1000, 1500).map((t) => [['model', 'vocab', t], '7'] as [(string | number)[], string]));
  return cases;
}

/** Seeded random byte mutations of the single-file fixtures (flips, overwrites, appends, truncations). */
export function randomCorpus(rand: () => number, count: number): FuzzCase[] {
  const targets = [
    single('tllm', F.tllm, 'tllm'),
    single('moon', F.moon, 'moon', { sidecars: [F.moonConfig] }),
    single('embd (checksums off)', F.embd, 'embd', { options: { format: 'embd', verifyChecksums: false } }),
    single('ajc1', F.ajc1, 'ajc1'),
    single('llama2c', F.llama2c, 'llama2c'),
    single('gguf', F.gguf, 'gguf'),
  ];
  const sizes = targets.map((t) => fs.statSync(t.source).size);
  const int = (n: number) => Math.floor(rand() * n);
  const cases: FuzzCase[] = [];
  for (let i = 0; i < count; i++) {
    const k = i % targets.length;
    const t = targets[k];
    const size = sizes[k];
    const offset = () => (rand() < 0.7 ? int(Math.min(size, 4096)) : int(size));
    const file = path.basename(t.source);
    let edit: Edit;
    switch (int(3)) {
      case 0: {
        const xor = Array.from({ length: 1 + int(8) }, () => [offset(), 1 << int(8)] as [number, number]);
        edit = { kind: 'bytes', file, what: `flip ${JSON.stringify(xor)}`, xor };
        break;
      }
      case 1: {
        const at = offset();
        const set = Array.from({ length: 1 + int(16) }, (_, j) => [at + j, rand() < 0.3 ? 0xff : int(256)] as [number, number]);
        edit = { kind: 'bytes', file, what: `overwrite ${JSON.stringify(set)}`, set };
        break;
      }
      default: {
        const append = Array.from({ length: 1 + int(64) }, () => int(256));
        edit = { kind: 'bytes', file, what: `append ${append.length} bytes`, append };
      }
    }
    cases.push({ ...t, edit });
  }
  return cases;
}
