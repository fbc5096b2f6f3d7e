/**
 * prefaultGgufWeights (native/mmap/early_prefault.h), which loadModel starts as soon as a GGUF is
 * mapped (and prefaultWeightSpans, over the spans an ajc1 reader found): it maps the tensors the forward pass reads into the process, not an untied token
 * embedding nor bf16 tensors, reads no byte outside a malformed file, and splits the work with the
 * decoder's own prefault through the mapping's claims. What is mapped is read from
 * /proc/self/pagemap (the present bit of each page; Linux only).
 */
import * as fs from 'node:fs';
import * as nodePath from 'node:path';
import { DecoderEngine } from '../../lib/engines/decoder';
import { readWeights } from '../../lib/formats';
import { mapFile, type MappedSource } from '../../lib/addon/mapping';
import { native } from '../../lib/addon/native';
import { closeWeights } from '../../lib/addon/weights';
import { fixture, tempDir } from '../helpers/fixtures';

const PAGE = 4096;
const MB = 1 << 20;

/** A GGUF v3 with no keys and the given tensors (1-D, ggml type `type`, `bytes` long each), data aligned to 32. */
function gguf(tensors: { name: string; type: number; bytes: number }[]): Buffer {
  const head: Buffer[] = [];
  const u32 = (v: number) => { const b = Buffer.alloc(4); b.writeUInt32LE(v); head.push(b); };
  const u64 = (v: number) => { const b = Buffer.alloc(8); b.writeBigUInt64LE(BigInt(v)); head.push(b); };
  u32(0x46554747); u32(3); u64(tensors.length); u64(0);
  let offset = 0;
  for (const t of tensors) {
    u64(t.name.length); head.push(Buffer.from(t.name));
    u32(1); u64(t.type === 0 ? t.bytes / 4 : t.bytes / 2); u32(t.type); u64(offset);
    offset += t.bytes;
  }
  const header = Buffer.concat(head);
  const start = Math.ceil(header.length / 32) * 32;
  const out = Buffer.alloc(start + offset, 1);
  header.copy(out);
  out.fill(0, header.length, start);
  return out;
}

/** Pages of [offset, offset + length) of `file` mapped into this process, from smaps (file offset to address) and pagemap (present bit). */
function mappedPages(file: string, offset: number, length: number): number {
  const real = fs.realpathSync(file);
  const pagemap = fs.openSync('/proc/self/pagemap', 'r');
  const entry = Buffer.alloc(8);
  let present = 0;
  try {
    for (const line of fs.readFileSync('/proc/self/maps', 'utf8').split('\n')) {
      const m = /^([0-9a-f]+)-([0-9a-f]+) \S+ ([0-9a-f]+) \S+ \d+\s+(.*)$/.exec(line);
      if (!m || m[4] !== real) continue;
      const [start, end, pgoff] = [parseInt(m[1], 16), parseInt(m[2], 16), parseInt(m[3], 16)];
      const from = Math.max(offset, pgoff), to = Math.min(offset + length, pgoff + (end - start));
      for (let at = Math.floor(from / PAGE) * PAGE; at < to; at += PAGE) {
        fs.readSync(pagemap, entry, 0, 8, ((start + at - pgoff) / PAGE) * 8);
        if (entry.readBigUInt64LE(0) >> 63n) present++;
      }
    }
  } finally {
    fs.closeSync(pagemap);
  }
  return present;
}

const linux = process.platform === 'linux' ? describe : describe.skip;

linux('prefaultGgufWeights', () => {
  let tmp: ReturnType<typeof tempDir>;
  const open: MappedSource[] = [];
  beforeEach(() => (tmp = tempDir('weightmap-gguf-prefault-')));
  afterEach(() => {
    for (const src of open.splice(0)) src.close();
    tmp.cleanup();
  });

  function write(name: string, bytes: Buffer): string {
    const path = nodePath.join(tmp.dir, name);
    fs.writeFileSync(path, bytes);
    fs.readFileSync(path); // in the page cache
    return path;
  }

  function map(path: string): MappedSource {
    const src = mapFile(path);
    open.push(src);
    return src;
  }

  const TENSORS = [
    { name: 'token_embd.weight', type: 1, bytes: 6 * MB },
    { name: 'blk.0.ffn_up.weight', type: 8, bytes: 6 * MB },
    { name: 'blk.0.attn_norm.weight', type: 30, bytes: 6 * MB }, // bf16
    { name: 'output.weight', type: 8, bytes: 6 * MB },
  ];

  /** Each tensor's [offset, length] in the file built from `tensors`. */
  function spans(bytes: Buffer, tensors: typeof TENSORS): Map<string, [number, number]> {
    let at = bytes.length - tensors.reduce((n, t) => n + t.bytes, 0);
    return new Map(tensors.map((t) => [t.name, [(at += t.bytes) - t.bytes, t.bytes] as [number, number]]));
  }

  test('maps what the forward pass reads: not an untied token embedding, not bf16 tensors', async () => {
    const bytes = gguf(TENSORS);
    const path = write('untied.gguf', bytes);
    const src = map(path);
    const at = spans(bytes, TENSORS);
    const pages = (name: string) => mappedPages(path, ...(at.get(name)! as [number, number]));
    const whole = (6 * MB) / PAGE + 1; // 6 MB not on a page boundary
    expect(await native().prefaultGgufWeights(src.file)).toBeGreaterThanOrEqual(12 * MB);
    expect(pages('blk.0.ffn_up.weight')).toBe(whole);
    expect(pages('output.weight')).toBe(whole);
    // Past the first 2 MB (the header's read may map the page-cache folio it lies in), nothing
    // but the last page, which shares a 64 KB claim unit with the next tensor.
    expect(mappedPages(path, 2 * MB, 4 * MB + 224)).toBeLessThanOrEqual(1);
    expect(pages('blk.0.attn_norm.weight')).toBeLessThanOrEqual((4 * MB) / PAGE);
  });

  test('a tied token embedding (no output.weight) is read whole by the head: it is mapped', async () => {
    const tied = TENSORS.filter((t) => t.name !== 'output.weight');
    const bytes = gguf(tied);
    const path = write('tied.gguf', bytes);
    const src = map(path);
    expect(await native().prefaultGgufWeights(src.file)).toBeGreaterThanOrEqual(12 * MB);
    expect(mappedPages(path, ...(spans(bytes, tied).get('token_embd.weight')! as [number, number]))).toBe((6 * MB) / PAGE + 1);
  });

  test('a second prefault of the same mapping finds the work claimed', async () => {
    const path = write('twice.gguf', gguf(TENSORS));
    const src = map(path);
    expect(await native().prefaultGgufWeights(src.file)).toBeGreaterThanOrEqual(12 * MB);
    expect(await native().prefaultGgufWeights(src.file)).toBe(0);
    src.file.advise(0, src.byteLength, 'dontneed');
    expect(mappedPages(path, 0, src.byteLength)).toBe(0);
    expect(await native().prefaultGgufWeights(src.file)).toBeGreaterThanOrEqual(12 * MB); // dropped pages are no longer claimed
    expect(mappedPages(path, 0, src.byteLength)).toBeGreaterThan((12 * MB) / PAGE);
  });

  test('a file it cannot read (cut anywhere, counts that lie, another format) gives 0, reading nothing past its end', async () => {
    const good = fs.readFileSync(fixture('gguf-quants', 'qwen3-qknorm', 'qwen3-qknorm.Q5_0.gguf'));
    const cuts = [0, 3, 8, 20, 24, 100, 1000, 5000, 20000, 60000];
    const lies = [16, 8].map((at) => { const b = Buffer.from(good); b.writeBigUInt64LE(1n << 60n, at); return b; }); // the KV count, the tensor count
    const files = [...cuts.map((n) => good.subarray(0, n)), ...lies, fs.readFileSync(fixture('ajc1-qwen3-tiny', 'model.bin'))];
    for (const [i, bytes] of files.entries()) {
      const src = map(write(`bad-${i}.gguf`, bytes));
      expect(await native().prefaultGgufWeights(src.file)).toBe(0);
    }
  });
});

linux('loadModel reading a GGUF with prefaultWeights', () => {
  test('the engine loads over an early prefault with every weight mapped', async () => {
    const FILE = fixture('gguf-quants', 'llama-ropefreqs', 'llama-ropefreqs.Q8_0.gguf');
    fs.readFileSync(FILE);
    const weights = await readWeights(FILE, { vocabulary: false, prefaultWeights: true });
    try {
      const engine = await DecoderEngine.load(weights, { threads: 1 });
      try {
        const size = fs.statSync(FILE).size;
        // The prefault runs on beside the load (nothing awaits it): on a busy machine it may still
        // be going when the engine is ready, so its pages are looked for until it is done (bounded).
        const until = Date.now() + 30_000;
        while (mappedPages(FILE, 0, size) * PAGE <= size * 0.8 && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
        expect(mappedPages(FILE, 0, size) * PAGE).toBeGreaterThan(size * 0.8);
      } finally {
        engine.dispose();
      }
    } finally {
      closeWeights(weights);
    }
  });
});

linux('prefaultWeightSpans (an ajc1 reader gives the spans)', () => {
  test('maps the streamed spans, not the partial ones, and claims what it mapped', async () => {
    const tmp = tempDir('weightmap-span-prefault-');
    const path = nodePath.join(tmp.dir, 'spans.bin');
    fs.writeFileSync(path, Buffer.alloc(12 * MB, 1));
    fs.readFileSync(path);
    const src = mapFile(path);
    try {
      expect(await native().prefaultWeightSpans(src.file, [6 * MB, 12 * MB], [0, 6 * MB])).toBe(6 * MB);
      expect(mappedPages(path, 6 * MB, 6 * MB)).toBe((6 * MB) / PAGE);
      expect(mappedPages(path, 2 * MB, 4 * MB)).toBe(0); // past the first block, which the file's folio may map whole
      expect(await native().prefaultWeightSpans(src.file, [6 * MB, 12 * MB], [])).toBe(0);
      expect(() => native().prefaultWeightSpans(src.file, [1], [])).toThrow(/begin, end pairs/);
    } finally {
      src.close();
      tmp.cleanup();
    }
  });
});

describe('loadModel', () => {
  const FILE = fixture('gguf-quants', 'llama-ropefreqs', 'llama-ropefreqs.Q8_0.gguf');
  const AJC1 = fixture('ajc1-qwen3-tiny', 'model.bin');
  test.each([
    [FILE, 'prefaultGgufWeights' as const, {}, 1],
    [FILE, 'prefaultGgufWeights' as const, { quant: 'f32' as const }, 0], // the engine reads a converted copy, not the mapping
    [AJC1, 'prefaultWeightSpans' as const, {}, 1],
    [AJC1, 'prefaultWeightSpans' as const, { quant: 'q8_0' as const }, 0],
  ])('starts the early prefault where the engine reads the weights in place (%s, %s, %j)', async (file, method, options, calls) => {
    const { loadModel } = await import('../../lib/models/model');
    const spy = jest.spyOn(native(), method);
    const savedCache = process.env.WEIGHTMAP_CACHE;
    process.env.WEIGHTMAP_CACHE = 'off';
    try {
      const model = await loadModel(file, { ...options, threads: 1 });
      model.dispose();
      expect(spy).toHaveBeenCalledTimes(calls);
    } finally {
      spy.mockRestore();
      if (savedCache === undefined) delete process.env.WEIGHTMAP_CACHE;
      else process.env.WEIGHTMAP_CACHE = savedCache;
    }
  });
});
