/**
 * gpt-oss HF folders' experts are converted in the tokenizer worker (lib/formats/containers/conversion-offload.ts,
 * converted-file.ts; lib/tokenizer-loading/conversion-jobs.ts): the file holds the bytes this thread writes (the same
 * code run here, the runner unset), the event loop turns throughout, and the file is written to its
 * end while the JS thread is held, which no conversion on this thread could do. `weightmap inspect`
 * converts nothing: it reports the tensors a read would convert. Nothing is timed.
 *
 * Needs what test/engines/gptoss-models.ts needs (llama.cpp's gguf-py in the peer cache, python3 with numpy).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { closeWeights, readWeights } from '../../lib';
import type { ModelWeights } from '../../lib/addon/weights';
import { setConversionRunner, type ConversionJob } from '../../lib/formats/containers/conversion-offload';
import { conversionInWorker } from '../../lib/tokenizer-loading/worker-client';
import { inspectReport } from '../../lib/cli/inspect';
import { runCli } from '../helpers/cli';
import { tempDir } from '../helpers/fixtures';
import { gptossFiles, gptossUsable, type GptossFiles } from '../engines/gptoss-models';

const suite = gptossUsable ? describe : describe.skip;
const savedCache = process.env.WEIGHTMAP_CACHE;
let work: ReturnType<typeof tempDir>;
let made: GptossFiles;
let caches = 0;
const opened: ModelWeights[] = [];

beforeAll(() => {
  if (!gptossUsable) return;
  work = tempDir('weightmap-gptoss-worker-');
  made = gptossFiles(path.join(work.dir, 'models'));
}, 120_000);

afterAll(() => {
  setConversionRunner(conversionInWorker);
  for (const w of opened) closeWeights(w);
  if (savedCache === undefined) delete process.env.WEIGHTMAP_CACHE;
  else process.env.WEIGHTMAP_CACHE = savedCache;
  work?.cleanup();
});

/** A cache folder no read has used. */
function freshCache(): string {
  return path.join(work.dir, `cache-${caches++}`);
}

/** `folder` read with `cache` as WEIGHTMAP_CACHE (closed after the tests). */
async function readIn(cache: string, folder: string, options: { convert?: boolean } = {}): Promise<ModelWeights> {
  process.env.WEIGHTMAP_CACHE = cache;
  try {
    const w = await readWeights(folder, options);
    opened.push(w);
    return w;
  } finally {
    process.env.WEIGHTMAP_CACHE = savedCache;
  }
}

/** The files of `cache`'s converted folder (none when it was never made). */
function convertedFiles(cache: string): string[] {
  const dir = path.join(cache, 'converted');
  return fs.existsSync(dir) ? fs.readdirSync(dir).sort() : [];
}

/** Sleeps the calling thread (its event loop included). */
function holdThread(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

suite('gpt-oss HF experts converted off the JS thread', () => {
  test.each(['hfF32', 'hfBf16', 'hfMxfp4'] as const)('%s: the worker writes the file this thread writes, byte for byte', async (form) => {
    const jobs: ConversionJob[] = [];
    const answers: string[] = [];
    setConversionRunner(async (job) => {
      jobs.push(job);
      const answer = await conversionInWorker(job);
      answers.push(answer);
      return answer;
    });
    const inWorker = await readIn(freshCache(), made[form]);
    setConversionRunner(undefined);
    const here = await readIn(freshCache(), made[form]).finally(() => setConversionRunner(conversionInWorker));
    expect(answers).toEqual(['written']);
    expect(jobs).toEqual([{ conversion: expect.any(String), checkpoint: made[form], file: expect.stringMatching(/\.tmp$/) }]);
    expect([inWorker.converted!.reused, here.converted!.reused]).toEqual([false, false]);
    expect(Buffer.compare(fs.readFileSync(inWorker.converted!.file), fs.readFileSync(here.converted!.file))).toBe(0);
    expect(inWorker.tensors.map((t) => [t.name, t.dtype, t.shape, t.byteLength])).toEqual(here.tensors.map((t) => [t.name, t.dtype, t.shape, t.byteLength]));
  }, 120_000);

  test('the file is written to its end while the JS thread is held (the conversion runs off it)', async () => {
    const folder = made.hfF32;
    const full = fs.statSync((await readIn(freshCache(), folder)).converted!.file).size;
    expect(full).toBeGreaterThan(12e6);

    // Once the job is sent, this thread sleeps until the file is whole (150 s at most, under the test's own timeout: a guard
    // against a hang, not a measure): only a conversion off this thread ends it.
    let size = -1;
    setConversionRunner(async (job) => {
      const answer = conversionInWorker(job); // posted to the worker before it returns
      const until = Date.now() + 150_000;
      const sizeOf = () => fs.statSync(job.file, { throwIfNoEntry: false })?.size ?? 0;
      for (size = sizeOf(); size < full && Date.now() < until; size = sizeOf()) holdThread(5);
      return answer;
    });
    const held = await readIn(freshCache(), folder).finally(() => setConversionRunner(conversionInWorker));
    expect(size).toBe(full);
    expect(held.converted).toMatchObject({ reused: false });
  }, 180_000);

  test('a checkpoint changed after its plan (the worker records other files) leaves no file: an error, not tensors of other bytes', async () => {
    const folder = path.join(work.dir, 'changed');
    fs.cpSync(made.hfMxfp4, folder, { recursive: true });
    setConversionRunner(async (job) => {
      const file = path.join(folder, 'model.safetensors');
      const then = fs.statSync(file).mtime;
      fs.utimesSync(file, then, new Date(then.getTime() + 5000));
      return conversionInWorker(job);
    });
    const cache = freshCache();
    const error = await readIn(cache, folder).catch((e: unknown) => e).finally(() => setConversionRunner(conversionInWorker));
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toMatch(/does not hold the tensors planned from .*changed while it was converted/);
    expect(convertedFiles(cache)).toEqual([]);
  }, 120_000);

  test('weightmap inspect reads headers and config only: the experts a read would convert, with their size; none converted', async () => {
    const folder = made.hfF32;
    const cache = freshCache();
    const looked = await readIn(cache, folder, { convert: false });
    expect(convertedFiles(cache)).toEqual([]);
    const pending = looked.converted!.pending!;
    // Each layer: gate, up and down of 8 experts (256 × 256 f32) and the gate and up biases [8, 256].
    expect(pending).toHaveLength(2 * (3 * 8 + 2));
    expect(looked.converted).toMatchObject({ tensors: 52, bytes: 2 * (3 * 8 * 256 * 256 * 4 + 2 * 8 * 256 * 4), reused: false });
    expect(pending.reduce((n, t) => n + t.byteLength, 0)).toBe(looked.converted!.bytes);
    expect(inspectReport(looked).experts).toEqual({ experts: 8, activeExperts: 4, expertBytes: 2 * 8 * 3 * 256 * 256 * 4, bytesPerToken: expect.any(Number) });

    process.env.WEIGHTMAP_CACHE = cache;
    const text = await runCli(['inspect', folder]).finally(() => (process.env.WEIGHTMAP_CACHE = savedCache));
    expect(text.exitCode).toBe(0);
    expect(text.stdout).toMatch(/converted: {4}52 tensors \(12\.0 MiB\) not viewable in place: a read converts them once into /);
    expect(convertedFiles(cache)).toEqual([]);

    // Once a read has converted them, inspect says the cache holds them, and still makes nothing.
    const read = await readIn(cache, folder);
    // Its tensors and the pending ones are the read's, each once; the pending ones as the read made them.
    expect([...looked.tensors.map((t) => t.name), ...pending.map((t) => t.name)].sort()).toEqual(read.tensors.map((t) => t.name).sort());
    const byName = new Map(read.tensors.map((t) => [t.name, t]));
    for (const t of pending) expect([t.name, t.dtype, t.shape, t.byteLength]).toEqual([t.name, byName.get(t.name)!.dtype, byName.get(t.name)!.shape, byName.get(t.name)!.byteLength]);
    expect(inspectReport(looked).experts).toEqual(inspectReport(read).experts);
    const file = read.converted!.file;
    const before = fs.statSync(file).mtimeMs;
    process.env.WEIGHTMAP_CACHE = cache;
    const json = await runCli(['inspect', folder, '--json']).finally(() => (process.env.WEIGHTMAP_CACHE = savedCache));
    const report = JSON.parse(json.stdout);
    expect(report.converted).toMatchObject({ file, tensors: 52, reused: true });
    expect(report.converted.pending).toHaveLength(52);
    expect(convertedFiles(cache)).toEqual([path.basename(file)]);
    expect(fs.statSync(file).mtimeMs).toBe(before);
  }, 120_000);
});
