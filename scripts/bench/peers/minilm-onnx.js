// The ONNX export of a BERT sentence-transformers folder (config.json + model.safetensors, f32,
// HF BertModel names) for transformers.js: the same weights, as the graph HF's exporters write for
// BertModel (embeddings + LayerNorm, then per layer self-attention with the additive padding mask,
// residual + LayerNorm, erf-GELU MLP, residual + LayerNorm), output last_hidden_state. Writes
// DIR/onnx/model.onnx and the tokenizer files transformers.js reads (tokenizer.json: MiniLM's).
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { model, node, tensor, valueInfo } = require('./onnx-writer');

/** name -> Float32Array of an f32 safetensors file (read whole: MiniLM is ~90 MB). */
function readSafetensors(file) {
  const bytes = fs.readFileSync(file);
  const headerLength = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.subarray(8, 8 + headerLength).toString('utf8'));
  const out = new Map();
  for (const [name, t] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    if (t.dtype !== 'F32') throw new Error(`${name}: ${t.dtype}, not F32`);
    const [begin, end] = t.data_offsets;
    const copy = new Float32Array((end - begin) / 4);
    Buffer.from(copy.buffer).set(bytes.subarray(8 + headerLength + begin, 8 + headerLength + end));
    out.set(name, { shape: t.shape, data: copy });
  }
  return out;
}

/** [rows, cols] row-major -> [cols, rows]: MatMul(x, W^T) wants the weight as [in, out]. */
function transpose({ shape: [rows, cols], data }) {
  const out = new Float32Array(rows * cols);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) out[c * rows + r] = data[r * cols + c];
  return { shape: [cols, rows], data: out };
}

function writeMiniLmOnnx(dir, tokenizerJson) {
  const config = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8'));
  const weights = readSafetensors(path.join(dir, 'model.safetensors'));
  const H = config.hidden_size, heads = config.num_attention_heads, headDim = H / heads, eps = config.layer_norm_eps;
  const initializers = [];
  const nodes = [];
  const init = (name, shape, data) => (initializers.push(tensor(name, shape, data)), name);
  const weight = (name) => init(name, weights.get(name).shape, weights.get(name).data);
  const f32 = (name, value) => init(name, [], Float32Array.of(value));
  const i64 = (name, values) => init(name, [values.length], BigInt64Array.from(values.map(BigInt)));
  let id = 0;
  const op = (type, inputs, attributes) => {
    const out = `t${id++}`;
    nodes.push(node(type, inputs, [out], attributes));
    return out;
  };
  const linear = (x, prefix) => {
    const w = transpose(weights.get(`${prefix}.weight`));
    return op('Add', [op('MatMul', [x, init(`${prefix}.weight_t`, w.shape, w.data)]), weight(`${prefix}.bias`)]);
  };
  const layerNorm = (x, prefix) => op('LayerNormalization', [x, weight(`${prefix}.weight`), weight(`${prefix}.bias`)], { axis: -1, epsilon: { float: eps } });

  // Embeddings: word + token type + position (the first seq rows of the position table).
  nodes.push(node('Shape', ['input_ids'], ['shape_of_ids']));
  const seq = op('Slice', ['shape_of_ids', i64('one', [1]), i64('two', [2])]);
  const positions = op('Slice', [weight('embeddings.position_embeddings.weight'), i64('zero', [0]), seq, i64('axis0', [0])]);
  const words = op('Gather', [weight('embeddings.word_embeddings.weight'), 'input_ids']);
  const types = op('Gather', [weight('embeddings.token_type_embeddings.weight'), 'token_type_ids']);
  let x = layerNorm(op('Add', [op('Add', [words, types]), positions]), 'embeddings.LayerNorm');

  // Additive mask [B, 1, 1, S]: 0 where attended, -10000 on padding.
  const keep = op('Cast', ['attention_mask'], { to: 1 });
  const mask = op('Unsqueeze', [op('Mul', [op('Sub', [f32('f_one', 1), keep]), f32('f_neg', -10000)]), i64('axes12', [1, 2])]);
  const split = i64('split_heads', [0, 0, heads, headDim]);
  const merge = i64('merge_heads', [0, 0, H]);
  const scale = f32('f_scale', 1 / Math.sqrt(headDim));
  for (let l = 0; l < config.num_hidden_layers; l++) {
    const p = `encoder.layer.${l}.`;
    const heads4 = (t, perm) => op('Transpose', [op('Reshape', [t, split])], { perm });
    const q = heads4(linear(x, `${p}attention.self.query`), [0, 2, 1, 3]);
    const k = heads4(linear(x, `${p}attention.self.key`), [0, 2, 3, 1]);
    const v = heads4(linear(x, `${p}attention.self.value`), [0, 2, 1, 3]);
    const scores = op('Add', [op('Mul', [op('MatMul', [q, k]), scale]), mask]);
    const context = op('MatMul', [op('Softmax', [scores], { axis: -1 }), v]);
    const merged = op('Reshape', [op('Transpose', [context], { perm: [0, 2, 1, 3] }), merge]);
    const attended = layerNorm(op('Add', [linear(merged, `${p}attention.output.dense`), x]), `${p}attention.output.LayerNorm`);
    const h = linear(attended, `${p}intermediate.dense`);
    const gelu = op('Mul', [op('Mul', [h, f32(`f_half_${l}`, 0.5)]), op('Add', [op('Erf', [op('Div', [h, f32(`f_sqrt2_${l}`, Math.SQRT2)])]), f32(`f_one_${l}`, 1)])]);
    x = layerNorm(op('Add', [linear(gelu, `${p}output.dense`), attended]), `${p}output.LayerNorm`);
  }
  nodes.push(node('Identity', [x], ['last_hidden_state']));

  const bytes = model({
    name: 'bert',
    opset: 17,
    nodes,
    initializers,
    inputs: ['input_ids', 'attention_mask', 'token_type_ids'].map((n) => valueInfo(n, 'int64', ['batch', 'sequence'])),
    outputs: [valueInfo('last_hidden_state', 'float', ['batch', 'sequence', H])],
  });
  fs.mkdirSync(path.join(dir, 'onnx'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'onnx', 'model.onnx'), bytes);
  fs.copyFileSync(tokenizerJson, path.join(dir, 'tokenizer.json'));
  fs.writeFileSync(
    path.join(dir, 'tokenizer_config.json'),
    JSON.stringify({ tokenizer_class: 'BertTokenizer', do_lower_case: true, model_max_length: 512, cls_token: '[CLS]', sep_token: '[SEP]', pad_token: '[PAD]', unk_token: '[UNK]', mask_token: '[MASK]' }),
  );
}

module.exports = { writeMiniLmOnnx };
