/**
 * One fuzz case: a target (a fixture file or folder and the call that reads it) and an edit of
 * one of its files. Plain JSON, so that the parent can hand a batch to a child process and print
 * any case as its reproduction.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

export type Edit =
  /** Writes `value` (a decimal BigInt; negative = two's complement) as a little-endian integer. */
  | { kind: 'int'; file: string; field: string; offset: number; width: 1 | 2 | 4 | 8; value: string }
  /** Keeps the first `length` bytes. */
  | { kind: 'truncate'; file: string; region: string; length: number }
  /** XORs bytes (bit flips) or overwrites them, at absolute offsets. */
  | { kind: 'bytes'; file: string; what: string; xor?: [number, number][]; set?: [number, number][]; append?: number[] }
  /** Sets JSON values (given as raw JSON text, e.g. "2147483648", "null", "\"x\"") at key paths. */
  | { kind: 'json'; file: string; sets: [(string | number)[], string][] }
  /** The same inside a safetensors header (the header length is rewritten). */
  | { kind: 'safetensors-json'; file: string; sets: [(string | number)[], string][] }
  /** Replaces dimension `dim` of a .npy header's shape by `value` (raw text), keeping the header length. */
  | { kind: 'npy-shape'; file: string; dim: number; value: string };

/** 'abort' and 'spin' exist to check the harness itself: they kill or hang the child on purpose. */
export type Operation = 'read' | 'tokenizer' | 'model' | 'abort' | 'spin';

export interface FuzzCase {
  /** Target name (for counts and messages). */
  target: string;
  /** The fixture: one file, or a folder copied whole. */
  source: string;
  /** What is read, relative to the case folder (the copied file's base name, or '.' for a folder). */
  entry: string;
  /** Files copied unchanged beside a single-file source (MOON's config.json). */
  sidecars?: string[];
  operation: Operation;
  /** readWeights options. */
  options?: Record<string, unknown>;
  edit?: Edit;
}

export function describeEdit(e: Edit | undefined): string {
  if (!e) return 'unedited';
  switch (e.kind) {
    case 'int': return `${e.file}: ${e.field} (u${8 * e.width} @ ${e.offset}) = ${e.value}`;
    case 'truncate': return `${e.file}: truncated to ${e.length} bytes (${e.region})`;
    case 'bytes': return `${e.file}: ${e.what}`;
    case 'json':
    case 'safetensors-json': return `${e.file}: ${e.sets.map(([p, v]) => `${p.map((k) => JSON.stringify(k)).join('.')} = ${v}`).join(', ')}`;
    case 'npy-shape': return `${e.file}: shape[${e.dim}] = ${e.value}`;
  }
}

/** JSON text with the values at `sets` replaced by raw JSON text (so 2^63 stays exact). */
export function editJsonText(text: string, sets: [(string | number)[], string][]): string {
  const root = JSON.parse(text);
  const marks: [string, string][] = [];
  sets.forEach(([keys, raw], i) => {
    let node = root;
    for (const k of keys.slice(0, -1)) node = node[k];
    const mark = `@@weightmap-fuzz-${i}@@`;
    node[keys[keys.length - 1]] = mark;
    marks.push([JSON.stringify(mark), raw]);
  });
  let out = JSON.stringify(root);
  for (const [mark, raw] of marks) out = out.split(mark).join(raw);
  return out;
}

function writeInt(b: Buffer, offset: number, width: number, value: bigint): void {
  const v = BigInt.asUintN(8 * width, value);
  for (let i = 0; i < width && offset + i < b.length; i++) b[offset + i] = Number((v >> BigInt(8 * i)) & 0xffn);
}

/** The edited bytes of one file. */
export function applyEdit(original: Buffer, e: Edit): Buffer {
  const b = Buffer.from(original);
  switch (e.kind) {
    case 'int':
      writeInt(b, e.offset, e.width, BigInt(e.value));
      return b;
    case 'truncate':
      return b.subarray(0, e.length);
    case 'bytes': {
      for (const [at, x] of e.xor ?? []) if (at < b.length) b[at] ^= x;
      for (const [at, v] of e.set ?? []) if (at < b.length) b[at] = v;
      return e.append ? Buffer.concat([b, Buffer.from(e.append)]) : b;
    }
    case 'json':
      return Buffer.from(editJsonText(b.toString('utf8'), e.sets));
    case 'safetensors-json': {
      const n = Number(b.readBigUInt64LE(0));
      const header = Buffer.from(editJsonText(b.subarray(8, 8 + n).toString('utf8'), e.sets));
      const length = Buffer.alloc(8);
      length.writeBigUInt64LE(BigInt(header.length));
      return Buffer.concat([length, header, b.subarray(8 + n)]);
    }
    case 'npy-shape': {
      const lengthBytes = b[6] === 1 ? 2 : 4;
      const start = 8 + lengthBytes;
      const n = lengthBytes === 2 ? b.readUInt16LE(8) : b.readUInt32LE(8);
      const text = b.subarray(start, start + n).toString('latin1');
      const m = /'shape': \(([^)]*)\)/.exec(text);
      if (!m) return b;
      const dims = m[1].split(',').map((s) => s.trim()).filter((s) => s.length > 0);
      if (e.dim >= dims.length) return b;
      dims[e.dim] = e.value;
      const shape = `'shape': (${dims.join(', ')}${dims.length === 1 ? ',' : ''})`;
      let edited = text.slice(0, m.index) + shape + text.slice(m.index + m[0].length);
      // Keep the header length: take the growth out of the space padding before the newline.
      const body = edited.trimEnd();
      edited = body.length + 1 <= n ? body.padEnd(n - 1, ' ') + '\n' : body + '\n';
      const header = Buffer.from(edited, 'latin1');
      const out = Buffer.concat([b.subarray(0, start), header, b.subarray(start + n)]);
      if (lengthBytes === 2) out.writeUInt16LE(Math.min(0xffff, header.length), 8);
      else out.writeUInt32LE(header.length, 8);
      return out;
    }
  }
}

/** The bytes an edit that keeps the file's length may change, [begin, end); undefined for the others. */
function editedSpan(e: Edit, length: number): [number, number] | undefined {
  if (e.kind === 'int') return [Math.min(e.offset, length), Math.min(e.offset + e.width, length)];
  if (e.kind === 'bytes' && !e.append) {
    const offsets = [...(e.xor ?? []), ...(e.set ?? [])].map(([at]) => at).filter((at) => at < length);
    return offsets.length ? [Math.min(...offsets), Math.max(...offsets) + 1] : [0, 0];
  }
  return undefined;
}

/**
 * The folder a child reads its cases from. Consecutive cases of one source share a copy of it:
 * each case writes its edit (only the edited bytes when the edit keeps the length, so that a
 * 14 MB fixture is not rewritten for every case) and puts the original back before the next.
 */
export class CaseFolder {
  private readonly originals = new Map<string, Buffer>();
  private source: string | undefined;
  private undo: (() => void) | undefined;

  constructor(readonly dir: string) {}

  private original(file: string): Buffer {
    let b = this.originals.get(file);
    if (!b) {
      b = fs.readFileSync(file);
      this.originals.set(file, b);
    }
    return b;
  }

  /** A fresh, writable copy of the case's source (and sidecars) in `dir`. */
  private copy(c: FuzzCase): void {
    fs.rmSync(this.dir, { recursive: true, force: true });
    if (fs.statSync(c.source).isDirectory()) {
      fs.cpSync(c.source, this.dir, { recursive: true });
      // Fixture trees are read-only; the copy must be writable to be edited and removed.
      for (const f of fs.readdirSync(this.dir, { recursive: true }) as string[]) {
        const file = path.join(this.dir, f);
        fs.chmodSync(file, fs.statSync(file).isDirectory() ? 0o755 : 0o644);
      }
      fs.chmodSync(this.dir, 0o755);
    } else {
      fs.mkdirSync(this.dir, { recursive: true });
      for (const f of [c.source, ...(c.sidecars ?? [])]) fs.writeFileSync(path.join(this.dir, path.basename(f)), this.original(f));
    }
    this.source = c.source;
  }

  /** Prepares case `c` (undoing the previous one); returns the path to read. */
  prepare(c: FuzzCase): string {
    this.undo?.();
    this.undo = undefined;
    if (this.source !== c.source) this.copy(c);
    const e = c.edit;
    if (e) {
      const from = fs.statSync(c.source).isDirectory()
        ? path.join(c.source, e.file)
        : [c.source, ...(c.sidecars ?? [])].find((f) => path.basename(f) === e.file)!;
      const original = this.original(from);
      const edited = applyEdit(original, e);
      const to = path.join(this.dir, e.file);
      const span = editedSpan(e, original.length);
      if (span) {
        const write = (bytes: Buffer) => {
          const fd = fs.openSync(to, 'r+');
          try {
            fs.writeSync(fd, bytes, span[0], span[1] - span[0], span[0]);
          } finally {
            fs.closeSync(fd);
          }
        };
        write(edited);
        this.undo = () => write(original);
      } else {
        fs.writeFileSync(to, edited);
        this.undo = () => fs.writeFileSync(to, original);
      }
    }
    return path.join(this.dir, c.entry);
  }
}
