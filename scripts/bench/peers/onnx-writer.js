// A minimal ONNX model writer: the protobuf wire format (varints and length-delimited fields) of
// the few onnx.proto messages a static inference graph needs: ModelProto, GraphProto, NodeProto,
// AttributeProto, TensorProto (raw_data), ValueInfoProto. Field numbers are onnx.proto's.
'use strict';

const ELEM = { float: 1, int64: 7 };

function varint(value) {
  let v = BigInt.asUintN(64, BigInt(value)); // negative int64 -> two's complement, 10 bytes
  const out = [];
  do {
    const byte = Number(v & 0x7fn);
    v >>= 7n;
    out.push(v ? byte | 0x80 : byte);
  } while (v);
  return Buffer.from(out);
}

const key = (field, wire) => varint((field << 3) | wire);
const intField = (field, value) => Buffer.concat([key(field, 0), varint(value)]);
const bytesField = (field, bytes) => Buffer.concat([key(field, 2), varint(bytes.length), bytes]);
const stringField = (field, text) => bytesField(field, Buffer.from(text, 'utf8'));
const messageField = (field, parts) => bytesField(field, Buffer.concat(parts));
function floatField(field, value) {
  const b = Buffer.alloc(4);
  b.writeFloatLE(value);
  return Buffer.concat([key(field, 5), b]);
}

/** TensorProto: dims, data_type, name, raw_data (little-endian). data: Float32Array or BigInt64Array. */
function tensor(name, dims, data) {
  const type = data instanceof BigInt64Array ? ELEM.int64 : ELEM.float;
  return [...dims.map((d) => intField(1, d)), intField(2, type), stringField(8, name), bytesField(9, Buffer.from(data.buffer, data.byteOffset, data.byteLength))];
}

/** AttributeProto from a JS value: number (int if integral and not `float`), number[] (ints) or { float }. */
function attribute(name, value) {
  if (Array.isArray(value)) return [stringField(1, name), ...value.map((v) => intField(8, v)), intField(20, 7)];
  if (typeof value === 'object') return [stringField(1, name), floatField(2, value.float), intField(20, 1)];
  return [stringField(1, name), intField(3, value), intField(20, 2)];
}

/** NodeProto. */
function node(op, inputs, outputs, attributes = {}) {
  return [
    ...inputs.map((i) => stringField(1, i)),
    ...outputs.map((o) => stringField(2, o)),
    stringField(3, `${op}_${outputs[0]}`),
    stringField(4, op),
    ...Object.entries(attributes).map(([n, v]) => messageField(5, attribute(n, v))),
  ];
}

/** ValueInfoProto of a tensor: dims are numbers (fixed) or strings (symbolic). */
function valueInfo(name, elem, dims) {
  const dim = (d) => messageField(1, [typeof d === 'number' ? intField(1, d) : stringField(2, d)]);
  const shape = messageField(2, dims.map(dim));
  return [stringField(1, name), messageField(2, [messageField(1, [intField(1, ELEM[elem]), shape])])];
}

/**
 * The serialized ModelProto (IR version 8, default domain at `opset`) of a graph:
 * { nodes: node()[], initializers: tensor()[], inputs: valueInfo()[], outputs: valueInfo()[] }.
 */
function model({ name, opset, nodes, initializers, inputs, outputs }) {
  const graph = [
    ...nodes.map((n) => messageField(1, n)),
    stringField(2, name),
    ...initializers.map((t) => messageField(5, t)),
    ...inputs.map((v) => messageField(11, v)),
    ...outputs.map((v) => messageField(12, v)),
  ];
  return Buffer.concat([intField(1, 8), stringField(2, 'weightmap-bench'), messageField(7, graph), messageField(8, [stringField(1, ''), intField(2, opset)])]);
}

module.exports = { model, node, tensor, valueInfo };
