/**
 * HF-style folders <-> EMBD, MOON and TLLM. Inputs are built here the way Hugging Face tools lay
 * them out (the tensors taken out of the fixture files by test-side parsers), and the outputs are
 * compared with the fixture files: MOON and TLLM byte for byte, EMBD tensor data by its CRC in
 * expected.json. Then EMBD/MOON/TLLM -> safetensors -> the same format gives the identical file,
 * because the folder carries the configuration (config.json with model_type), the vocabulary and
 * EMBD's metadata (created_at included).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { convert } from '../../lib/formats/writing/convert';
import { crc32 } from '../../lib/addon/checksums';
import { modelConfigFromHf } from '../../lib/formats/containers/hf-config';
import { MOONDREAM2_CONFIG } from '../../lib/architectures/moondream';
import { fixture, readJson } from '../helpers/fixtures';
import { embdTensors, moonRecords, sameBytes, tllmRecords, transpose, writeJson, writeSafetensors, type RawTensor } from './helpers';
import { testWorkspace } from '../helpers/workspace';

const EMBD = fixture('embd-minilm-tiny', 'model.weights');
const MOON = fixture('moon-tiny', 'model.moon');
const TLLM = fixture('tllm-tiny', 'model.tllm');
const MINILM = fixture('tokenizers', 'minilm');

const { fresh, read } = testWorkspace('weightmap-hf-folders-');

describe('BERT HF folder -> EMBD', () => {
  const layout = readJson('embd-minilm-tiny', 'expected.json').file_layout;
  const fixtureBytes = fs.readFileSync(EMBD);
  const tensors = embdTensors(fixtureBytes, layout.tensor_index_offset, layout.tensor_index_count, layout.tensor_data_offset);

  /** all-MiniLM-L6-v2's folder layout with the fixture's tensors and sizes; `vocab`: which vocabulary file. */
  function bertFolder(vocab: 'vocab.txt' | 'tokenizer.json', prefix: string): string {
    const dir = fresh('minilm');
    const raw: RawTensor[] = tensors.map((t) => ({ name: prefix + t.name, dtype: 'F32', shape: t.shape, data: t.data }));
    // A buffer transformers saves with BertModel; the converter drops it.
    raw.push({ name: `${prefix}embeddings.position_ids`, dtype: 'I64', shape: [1, 512], data: new Uint8Array(new BigInt64Array(512).map((_, i) => BigInt(i)).buffer) });
    writeSafetensors(path.join(dir, 'model.safetensors'), raw.reverse(), { format: 'pt' });
    writeJson(path.join(dir, 'config.json'), {
      architectures: ['BertModel'], attention_probs_dropout_prob: 0.1, hidden_act: 'gelu', hidden_dropout_prob: 0.1, hidden_size: 32,
      initializer_range: 0.02, intermediate_size: 64, layer_norm_eps: 1e-12, max_position_embeddings: 512, model_type: 'bert',
      num_attention_heads: 4, num_hidden_layers: 2, pad_token_id: 0, position_embedding_type: 'absolute', type_vocab_size: 2, vocab_size: 30522,
    });
    writeJson(path.join(dir, 'modules.json'), [
      { idx: 0, name: '0', path: '', type: 'sentence_transformers.models.Transformer' },
      { idx: 1, name: '1', path: '1_Pooling', type: 'sentence_transformers.models.Pooling' },
      { idx: 2, name: '2', path: '2_Normalize', type: 'sentence_transformers.models.Normalize' },
    ]);
    writeJson(path.join(dir, 'sentence_bert_config.json'), { max_seq_length: 256, do_lower_case: false });
    writeJson(path.join(dir, '1_Pooling', 'config.json'), {
      word_embedding_dimension: 32, pooling_mode_cls_token: false, pooling_mode_mean_tokens: true, pooling_mode_max_tokens: false, pooling_mode_mean_sqrt_len_tokens: false,
    });
    writeJson(path.join(dir, 'tokenizer_config.json'), {
      do_lower_case: true, unk_token: '[UNK]', sep_token: '[SEP]', pad_token: '[PAD]', cls_token: '[CLS]', mask_token: '[MASK]', model_max_length: 512,
    });
    fs.copyFileSync(path.join(MINILM, vocab), path.join(dir, vocab));
    return dir;
  }

  test.each([
    ['vocab.txt', ''],
    ['tokenizer.json', 'bert.'],
  ] as const)('from %s (tensor prefix %j): the fixture\'s tensors, data CRC, vocabulary and configuration', async (vocab, prefix) => {
    const out = path.join(fresh('embd'), 'model.weights');
    await convert(bertFolder(vocab, prefix), out, { to: 'embd' });
    const bytes = fs.readFileSync(out);
    const dataOffset = bytes.readUInt32LE(36);
    const dataSize = Number(bytes.readBigUInt64LE(40));
    expect(dataSize).toBe(layout.tensor_data_size);
    expect(crc32(bytes.subarray(dataOffset, dataOffset + dataSize))).toBe(layout.data_checksum);
    const mine = embdTensors(bytes, bytes.readUInt32LE(28), bytes.readUInt32LE(32), dataOffset);
    expect(mine.map((t) => [t.name, t.shape])).toEqual(tensors.map((t) => [t.name, t.shape]));

    const w = await read(out);
    const ref = await read(EMBD);
    expect(w.config).toEqual(ref.config);
    expect(w.checksums).toBe('verified');
    const lines = fs.readFileSync(path.join(MINILM, 'vocab.txt'), 'utf8').split('\n').slice(0, 30522);
    expect(w.tokenizer).toEqual({ kind: 'wordpiece', tokens: lines, specialIds: { pad: 0, unk: 100, cls: 101, sep: 102, mask: 103 }, doLowerCase: true });
    for (const key of ['embedding_dim', 'vocab_size', 'num_layers', 'num_attention_heads', 'hidden_size', 'intermediate_size', 'max_position_emb', 'layer_norm_eps', 'pooling', 'normalize', 'max_seq_length']) {
      expect([key, w.metadata[key]]).toEqual([key, layout.metadata[key]]);
    }
  });

  test('EMBD -> safetensors -> EMBD is the identical file (metadata, created_at and vocabulary ride along)', async () => {
    const dir = fresh('hf');
    await convert(EMBD, path.join(dir, 'model.safetensors'), { to: 'safetensors' });
    // vocab.txt is MiniLM's own file again.
    expect(sameBytes(path.join(MINILM, 'vocab.txt'), path.join(dir, 'vocab.txt')).firstDifference).toBe(-1);
    const hf = await read(dir);
    expect(hf.architecture).toBe('bert');
    expect(hf.metadata['embd.created_at']).toBe('2025-01-16T12:00:00Z');
    const out = path.join(fresh('back'), 'model.weights');
    await convert(dir, out, { to: 'embd' });
    expect(sameBytes(EMBD, out).firstDifference).toBe(-1);
  });
});

/** MOON records (weights.py names) and the HF moondream2 keys they come from (FORMATS.md §2.3). */
const MOON_KEYS: [record: string, key: string, stack: '' | 'text' | 'vision', transposed: boolean][] = [
  ['word_token_embedding', 'model.text.wte', '', false],
  ['t_ln_w', 'model.text.blocks.{l}.ln.weight', 'text', false],
  ['t_ln_b', 'model.text.blocks.{l}.ln.bias', 'text', false],
  ['t_Wqkv_w', 'model.text.blocks.{l}.attn.qkv.weight', 'text', false],
  ['t_Wqkv_b', 'model.text.blocks.{l}.attn.qkv.bias', 'text', false],
  ['t_out_proj_w', 'model.text.blocks.{l}.attn.proj.weight', 'text', false],
  ['t_out_proj_bias', 'model.text.blocks.{l}.attn.proj.bias', 'text', false],
  ['t_fc1_w', 'model.text.blocks.{l}.mlp.fc1.weight', 'text', false],
  ['t_fc1_b', 'model.text.blocks.{l}.mlp.fc1.bias', 'text', false],
  ['t_fc2_w', 'model.text.blocks.{l}.mlp.fc2.weight', 'text', false],
  ['t_fc2_b', 'model.text.blocks.{l}.mlp.fc2.bias', 'text', false],
  ['t_linear_w', 'model.text.lm_head.weight', '', false],
  ['t_linear_b', 'model.text.lm_head.bias', '', false],
  ['t_ln_out_w', 'model.text.post_ln.weight', '', false],
  ['t_ln_out_b', 'model.text.post_ln.bias', '', false],
  ['v_patch_embedding_linear_w', 'model.vision.patch_emb.weight', '', true],
  ['v_patch_embedding_linear_b', 'model.vision.patch_emb.bias', '', false],
  ['v_pos_embedding', 'model.vision.pos_emb', '', false],
  ['v_Wqkv_w', 'model.vision.blocks.{l}.attn.qkv.weight', 'vision', true],
  ['v_Wqkv_b', 'model.vision.blocks.{l}.attn.qkv.bias', 'vision', false],
  ['v_out_proj_w', 'model.vision.blocks.{l}.attn.proj.weight', 'vision', true],
  ['v_out_proj_b', 'model.vision.blocks.{l}.attn.proj.bias', 'vision', false],
  ['v_fc1_w', 'model.vision.blocks.{l}.mlp.fc1.weight', 'vision', true],
  ['v_fc1_b', 'model.vision.blocks.{l}.mlp.fc1.bias', 'vision', false],
  ['v_fc2_w', 'model.vision.blocks.{l}.mlp.fc2.weight', 'vision', true],
  ['v_fc2_b', 'model.vision.blocks.{l}.mlp.fc2.bias', 'vision', false],
  ['v_norm1_w', 'model.vision.blocks.{l}.ln1.weight', 'vision', false],
  ['v_norm1_b', 'model.vision.blocks.{l}.ln1.bias', 'vision', false],
  ['v_norm2_w', 'model.vision.blocks.{l}.ln2.weight', 'vision', false],
  ['v_norm2_b', 'model.vision.blocks.{l}.ln2.bias', 'vision', false],
  ['v_norm_out_w', 'model.vision.post_ln.weight', '', false],
  ['v_norm_out_b', 'model.vision.post_ln.bias', '', false],
  ['v_proj_fc1_w', 'model.vision.proj_mlp.fc1.weight', '', true],
  ['v_proj_fc1_b', 'model.vision.proj_mlp.fc1.bias', '', false],
  ['v_proj_fc2_w', 'model.vision.proj_mlp.fc2.weight', '', true],
  ['v_proj_fc2_b', 'model.vision.proj_mlp.fc2.bias', '', false],
];

describe('Moondream2 HF keys -> MOON', () => {
  const moonConfig = readJson('moon-tiny', 'config.json');

  /** The moondream2 HF layout of the fixture: per-layer tensors, HF [out,in] vision matrices, region heads too. */
  function moondreamFolder(): string {
    const records = new Map(moonRecords(fs.readFileSync(MOON)).map((r) => [r.name, r]));
    const raw: RawTensor[] = [];
    for (const [record, key, stack, transposed] of MOON_KEYS) {
      const r = records.get(record)!;
      const layers = stack ? r.shape[0] : 1;
      const shape = stack ? r.shape.slice(1) : r.shape;
      const size = shape.reduce((a, b) => a * b, 1) * 2;
      for (let l = 0; l < layers; l++) {
        let data = r.data.subarray(l * size, (l + 1) * size);
        let hfShape = shape;
        if (transposed) {
          data = transpose(data, shape[0], shape[1], 2);
          hfShape = [shape[1], shape[0]];
        }
        raw.push({ name: key.replace('{l}', String(l)), dtype: 'F16', shape: hfShape, data });
      }
    }
    // moondream2 also ships its detection/pointing heads; MOON does not store them.
    raw.push({ name: 'model.region.coord_encoder.weight', dtype: 'F16', shape: [4, 8], data: new Uint8Array(64) });
    raw.push({ name: 'model.region.size_decoder.fc1.bias', dtype: 'F16', shape: [8], data: new Uint8Array(16) });
    const dir = fresh('moondream2');
    writeSafetensors(path.join(dir, 'model.safetensors'), raw.sort((a, b) => (a.name < b.name ? -1 : 1)), { format: 'pt' });
    const { format: _f, ...sizes } = moonConfig;
    writeJson(path.join(dir, 'config.json'), { architectures: ['HfMoondream'], model_type: 'moondream1', torch_dtype: 'float16', ...sizes });
    return dir;
  }

  test('per-layer tensors are stacked, vision matrices transposed: the fixture file byte for byte', async () => {
    const out = path.join(fresh('moon'), 'model.moon');
    await convert(moondreamFolder(), out, { to: 'moon' });
    expect(sameBytes(MOON, out).firstDifference).toBe(-1);
    // The sizes go to a config.json beside it (MOON holds none); they read back as the fixture's.
    const back = await read(out);
    const ref = await read(MOON);
    expect(back.config).toEqual(ref.config);
  });

  test('MOON -> safetensors -> MOON is identical; the folder reads as moondream', async () => {
    const dir = fresh('hf');
    await convert(MOON, path.join(dir, 'model.safetensors'), { to: 'safetensors' });
    const hf = await read(dir);
    expect(hf.architecture).toBe('moondream');
    expect(hf.tensors.find((t) => t.name === 'model.vision.blocks.1.mlp.fc1.weight')!.shape).toEqual([96, 48]);
    const out = path.join(fresh('back'), 'model.moon');
    await convert(dir, out, { to: 'moon' });
    expect(sameBytes(MOON, out).firstDifference).toBe(-1);
  });

  test("moondream2's own config.json (no sizes) means Moondream2's sizes", () => {
    const published = { architectures: ['HfMoondream'], auto_map: { AutoConfig: 'hf_moondream.HfConfig' }, config: {}, model_type: 'moondream1', torch_dtype: 'float16', transformers_version: '4.44.0' };
    expect(modelConfigFromHf(published)).toEqual(MOONDREAM2_CONFIG);
  });
});

describe('GPT-style tensors -> TLLM', () => {
  const names = (l: number) => [
    `model.layers.${l}.self_attn.q_proj.weight`, `model.layers.${l}.self_attn.k_proj.weight`, `model.layers.${l}.self_attn.v_proj.weight`,
    `model.layers.${l}.self_attn.o_proj.weight`, `model.layers.${l}.mlp.fc1.weight`, `model.layers.${l}.mlp.fc1.bias`,
    `model.layers.${l}.mlp.fc2.weight`, `model.layers.${l}.mlp.fc2.bias`, `model.layers.${l}.input_layernorm.weight`,
    `model.layers.${l}.input_layernorm.bias`, `model.layers.${l}.post_attention_layernorm.weight`, `model.layers.${l}.post_attention_layernorm.bias`,
  ];
  const recordNames = ['model.embed_tokens.weight', 'model.embed_positions.weight', ...names(0), ...names(1), 'lm_head.weight'];
  // The embeddings are tables [rows, d]; every other matrix is a linear layer, stored [in,out].
  const linear = (name: string) => !name.includes('embed') && name.endsWith('.weight') && !name.includes('layernorm');

  test('HF [out,in] matrices under their names, config.json model_type "tllm": the fixture file byte for byte', async () => {
    const records = tllmRecords(fs.readFileSync(TLLM), 2);
    const raw: RawTensor[] = records.map((r, i) => {
      const name = recordNames[i];
      if (!linear(name)) return { name, dtype: 'F32', shape: r.dims, data: r.data };
      return { name, dtype: 'F32', shape: [r.dims[1], r.dims[0]], data: transpose(r.data, r.dims[0], r.dims[1], 4) };
    });
    const dir = fresh('tllm-hf');
    writeSafetensors(path.join(dir, 'model.safetensors'), raw.reverse());
    writeJson(path.join(dir, 'config.json'), {
      model_type: 'tllm', hidden_size: 64, num_hidden_layers: 2, num_attention_heads: 2, intermediate_size: 128,
      max_position_embeddings: 128, vocab_size: 100, dropout: Math.fround(0.1),
    });
    const out = path.join(fresh('tllm'), 'model.tllm');
    await convert(dir, out, { to: 'tllm' });
    expect(sameBytes(TLLM, out).firstDifference).toBe(-1);
  });

  test('TLLM -> safetensors -> TLLM is identical; the folder reads as tllm with [out,in] matrices', async () => {
    const dir = fresh('hf');
    await convert(TLLM, path.join(dir, 'model.safetensors'), { to: 'safetensors' });
    const hf = await read(dir);
    expect(hf.architecture).toBe('tllm');
    expect(hf.config).toEqual((await read(TLLM)).config);
    expect(hf.tensors.find((t) => t.name === 'model.layers.0.mlp.fc1.weight')!.shape).toEqual([128, 64]);
    const out = path.join(fresh('back'), 'model.tllm');
    await convert(dir, out, { to: 'tllm' });
    expect(sameBytes(TLLM, out).firstDifference).toBe(-1);
  });
});
