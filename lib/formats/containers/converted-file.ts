/**
 * Tensors a reader cannot view in place (gpt-oss's Hugging Face experts: fused, transposed and
 * interleaved, MXFP4 in another nibble order; see gptoss-hf.ts), converted once into a file of the
 * cache, `$WEIGHTMAP_CACHE/converted/<key>.wmconv`, and mapped like any weights file: the experts a
 * token never routes to stay on disk, and a second load maps the file without converting again.
 * The file is used only where its header records the same conversion of the same source files
 * (real path, size, modification time) and the same tensors; otherwise it is written again
 * (temporary file, then rename). With the cache off (WEIGHTMAP_CACHE=off) the file is written to
 * the system's temporary folder and unlinked once mapped (the mapping keeps its pages).
 *
 * Layout: "WMCONV01", u32 LE length N, N bytes of JSON (the record), zero padding to 64, then each
 * tensor's bytes in the order given, each starting at a multiple of 64.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as nodePath from 'node:path';
import { cacheDir, cacheKey } from '../../base/cache-key';
import { mapFile, type MappedSource } from '../../addon/mapping';
import type { DType, TensorView } from '../../addon/weights';

const MAGIC = 'WMCONV01';
const ALIGN = 64;

/** A tensor made by a conversion: its canonical name, dtype, shape and bytes (produced in order, in chunks). */
export interface ConvertedTensor {
  name: string;
  dtype: DType;
  shape: number[];
  byteLength: number;
  chunks(): Iterable<Uint8Array>;
}

/** The mapped file of a conversion and the views of its tensors. */
export interface ConvertedFile {
  source: MappedSource;
  views: TensorView[];
  /** The file (under the cache, or the unlinked temporary one). */
  path: string;
  /** Whether the cache held it already (nothing converted). */
  reused: boolean;
}

function align(n: number): number {
  return Math.ceil(n / ALIGN) * ALIGN;
}

/** The record a file holds: what it converts, from which files, into which tensors. */
function record(conversion: string, sources: readonly string[], tensors: readonly ConvertedTensor[]): string {
  const files = [...new Set(sources)].map((p) => {
    const real = fs.realpathSync(p);
    const stat = fs.statSync(real);
    return [real, stat.size, stat.mtimeMs];
  });
  return JSON.stringify({ conversion, files, tensors: tensors.map((t) => [t.name, t.dtype, t.shape, t.byteLength]) });
}

function header(text: string): Buffer {
  const json = Buffer.from(text, 'utf8');
  const out = Buffer.alloc(align(12 + json.length));
  out.write(MAGIC, 0, 'latin1');
  out.writeUInt32LE(json.length, 8);
  json.copy(out, 12);
  return out;
}

/** The file mapped, when it holds `text`'s conversion and is whole; undefined otherwise. */
function reuse(file: string, text: string, total: number): MappedSource | undefined {
  let mapped: MappedSource;
  try {
    mapped = mapFile(file);
  } catch {
    return undefined;
  }
  const b = mapped.bytes;
  const n = b.length >= 12 ? b.readUInt32LE(8) : -1;
  if (mapped.byteLength === total && b.toString('latin1', 0, 8) === MAGIC && n >= 0 && 12 + n <= b.length && b.toString('utf8', 12, 12 + n) === text) return mapped;
  mapped.close();
  return undefined;
}

async function writeFile(file: string, head: Buffer, tensors: readonly ConvertedTensor[], signal?: AbortSignal): Promise<void> {
  const handle = await fs.promises.open(file, 'w');
  try {
    let at = 0;
    const put = async (bytes: Uint8Array) => {
      signal?.throwIfAborted();
      await handle.write(bytes, 0, bytes.length, at);
      at += bytes.length;
    };
    await put(head);
    for (const t of tensors) {
      const end = at + t.byteLength;
      for (const chunk of t.chunks()) await put(chunk);
      if (at !== end) throw new Error(`converted tensor '${t.name}' produced ${at - (end - t.byteLength)} bytes, not ${t.byteLength}`);
      if (align(at) > at) await put(new Uint8Array(align(at) - at));
    }
  } finally {
    await handle.close();
  }
}

/**
 * `tensors` (converted by `conversion`, a name that changes whenever its output would, from the
 * files `sources`) as views of a mapped file: the cache's when it holds them, else written now.
 */
export async function convertedFile(conversion: string, sources: readonly string[], tensors: readonly ConvertedTensor[], signal?: AbortSignal): Promise<ConvertedFile> {
  const text = record(conversion, sources, tensors);
  const head = header(text);
  const offsets: number[] = [];
  let total = head.length;
  for (const t of tensors) {
    offsets.push(total);
    total = align(total + t.byteLength);
  }
  const views = (source: MappedSource): TensorView[] =>
    tensors.map((t, i) => ({ name: t.name, dtype: t.dtype, shape: [...t.shape], source, byteOffset: offsets[i], byteLength: t.byteLength }));
  const dir = cacheDir('converted');
  if (!dir) {
    const file = nodePath.join(os.tmpdir(), `weightmap-${process.pid}-${cacheKey(text)}.wmconv`);
    try {
      await writeFile(file, head, tensors, signal);
      const source = mapFile(file);
      return { source, views: views(source), path: file, reused: false };
    } finally {
      try {
        fs.rmSync(file, { force: true });
      } catch {
        // Windows removes no mapped file: it stays in the temporary folder.
      }
    }
  }
  const file = nodePath.join(dir, `${cacheKey(text)}.wmconv`);
  const cached = reuse(file, text, total);
  if (cached) return { source: cached, views: views(cached), path: file, reused: true };
  fs.mkdirSync(dir, { recursive: true });
  const temp = `${file}.${process.pid}.tmp`;
  try {
    await writeFile(temp, head, tensors, signal);
    fs.renameSync(temp, file);
  } finally {
    fs.rmSync(temp, { force: true });
  }
  const source = mapFile(file);
  return { source, views: views(source), path: file, reused: false };
}
