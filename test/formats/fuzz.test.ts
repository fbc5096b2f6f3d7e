/**
 * Fuzzing every reader the way issue 10's audit did, each case in a child process under a heap
 * and time limit (fuzz/harness.ts), so that an abort or a hang fails a case instead of killing
 * the jest worker: structured edits of every count, size, offset and dimension field
 * (2^31−1, 2^31, 2^32−1, 2^63, −1, 0), truncation at every region boundary, config.json and
 * tokenizer.json value edits (fuzz/corpus.ts), then seeded random byte mutations.
 *
 * Every case must end in a typed error (WeightFormatError, or UnsupportedError for valid files
 * weightmap does not handle) or a successful read whose tensor views lie inside their files.
 * CI runs the whole structured corpus (~5,400 cases, ~40 s on 2 cores) and RANDOM_CASES random
 * ones with a fixed seed; WEIGHTMAP_FUZZ_BATCHES=N adds N more batches of random cases (a count, not a
 * time budget, so a run does the same cases on any machine). WEIGHTMAP_FUZZ_SEED changes the seed;
 * WEIGHTMAP_FUZZ_REPORT=FILE also writes the per-format counts there as JSON.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { WeightFormatError } from '../../lib/base/errors';
import { readWeights, writeWeights } from '../../lib/formats';
import { closeWeights, type FormatName } from '../../lib/addon/weights';
import { fixture, tempDir } from '../helpers/fixtures';
import { mulberry32 } from '../helpers/rng';
import { randomCorpus, structuredCorpus } from './fuzz/corpus';
import { describeEdit, type FuzzCase } from './fuzz/edits';
import { runCases, type Outcome, type Result } from './fuzz/harness';

const EXTRA_BATCHES = Number(process.env.WEIGHTMAP_FUZZ_BATCHES ?? 0);
const SEED = Number(process.env.WEIGHTMAP_FUZZ_SEED ?? 20261122);
const RANDOM_CASES = 120;
/** A file to write the per-format counts to as JSON (a report for long runs; nothing reads it back). */
const REPORT = process.env.WEIGHTMAP_FUZZ_REPORT;
/** Limits of one child: V8 heap (MiB) and the time one case may take (generous: the machine is shared). */
const LIMITS = { heapMb: 512, caseTimeoutMs: Number(process.env.WEIGHTMAP_FUZZ_CASE_MS ?? 30000) };

type Counts = Record<Outcome, number> & { cases: number };

describe('reader fuzzing in child processes', () => {
  const tmp = tempDir('weightmap-fuzz-');
  afterAll(() => tmp.cleanup());

  test(`structured and random cases end in a typed error or a valid read (seed ${SEED}${EXTRA_BATCHES ? `, ${EXTRA_BATCHES} more random batches` : ''})`, async () => {
    const rand = mulberry32(SEED);
    // The fixtures hold no HF folder: make one (model.safetensors + config.json) from stories260K.
    const hf = path.join(tmp.dir, 'hf');
    const w = await readWeights(fixture('llama-stories260k', 'stories260K.bin'));
    await writeWeights(w, path.join(hf, 'model.safetensors'), { format: 'safetensors' });
    closeWeights(w);

    const structured = structuredCorpus(hf);
    const batches: FuzzCase[][] = [structured, ...Array.from({ length: 1 + EXTRA_BATCHES }, () => randomCorpus(rand, RANDOM_CASES))];
    const counts = new Map<string, Counts>();
    const failures: string[] = [];
    for (let b = 0; b < batches.length; b++) {
      const cases = batches[b];
      const results: Result[] = await runCases(cases, path.join(tmp.dir, `work-${b}`), LIMITS);
      for (const r of results) {
        const c = cases[r.index];
        const n = counts.get(c.target) ?? { cases: 0, typed: 0, accepted: 0, untyped: 0, invalid: 0, crash: 0, hang: 0 };
        counts.set(c.target, n);
        n.cases++;
        n[r.outcome]++;
        if (r.outcome !== 'typed' && r.outcome !== 'accepted') {
          failures.push(`${r.outcome}: ${c.target} (${c.operation} ${c.source}), ${describeEdit(c.edit)}\n  ${r.message ?? ''}\n  case: ${JSON.stringify(c)}`);
        }
      }
    }
    const table = [...counts].map(([t, n]) => `  ${t.padEnd(24)} ${n.cases} cases: ${n.typed} typed errors, ${n.accepted} accepted valid, ${n.crash} crashes, ${n.hang} hangs, ${n.untyped} untyped, ${n.invalid} invalid`);
    // eslint-disable-next-line no-console
    console.log(`fuzz (seed ${SEED})\n${table.join('\n')}`);
    if (REPORT) fs.writeFileSync(REPORT, JSON.stringify({ seed: SEED, extraBatches: EXTRA_BATCHES, targets: Object.fromEntries(counts), failures }, null, 1));
    expect(failures).toEqual([]);
  }, 1800000 * (1 + EXTRA_BATCHES));

  test('random files are rejected by every reader with WeightFormatError', async () => {
    const rand = mulberry32(SEED + 1);
    const formats: FormatName[] = ['tllm', 'moon', 'embd', 'ajc1', 'llama2c', 'gguf', 'npy', 'safetensors'];
    for (let i = 0; i < 100; i++) {
      const file = path.join(tmp.dir, `random-${i}.bin`);
      fs.writeFileSync(file, Buffer.from(Array.from({ length: Math.floor(rand() * 600) }, () => Math.floor(rand() * 256))));
      for (const format of formats) {
        await expect(readWeights(file, { format })).rejects.toBeInstanceOf(WeightFormatError);
      }
      fs.rmSync(file);
    }
  });
});
