/**
 * The sequence never exceeds the model's context (prompt + generated <= max_sequence_length, as
 * llama2.c and Hugging Face count it) on every engine; models without a vocabulary run on ids and
 * refuse text with their own error; misuse is refused before the engine loads, every RangeError
 * with code ERR_OUT_OF_RANGE.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DecoderEngine } from '../../lib/engines/decoder';
import { GptEngine } from '../../lib/engines/gpt';
import { MoondreamEngine } from '../../lib/engines/moondream';
import { NoTokenizerError } from '../../lib/base/errors';
import { formatModule } from '../../lib/formats';
import { loadModel } from '../../lib/models/model';
import { runCli } from '../helpers/cli';
import { fixture, readF32, readJson } from '../helpers/fixtures';

const STORIES = fixture('llama-stories260k', 'stories260K.bin');
const TLLM = fixture('tllm-tiny', 'model.tllm');
const MOON = fixture('moon-tiny', 'model.moon');

/** `n` deterministic ids below `vocab`. */
const promptIds = (n: number, vocab: number) => Array.from({ length: n }, (_, i) => (i * 7919 + 13) % vocab);

describe('prompt + generated <= max_sequence_length on every engine', () => {
  test.each([
    ['decoder (stories260K, 512)', STORIES, 512, 512],
    ['gpt (TLLM, 128)', TLLM, 128, 100],
    ['phi (MOON, 2048)', MOON, 2048, 512],
  ])('%s: a prompt that fills the context generates nothing; S-14 tokens generate exactly 14', async (_name, file, maxSeq, vocab) => {
    const model = await loadModel(file, { threads: 1 });
    try {
      expect(model.contextLength).toBe(maxSeq);
      const full = model.generate(promptIds(maxSeq, vocab), { maxTokens: 50, stopTokens: [] });
      expect(await full.text()).toBe('');
      expect([full.tokens, full.stopReason]).toEqual([[], 'context-full']);
      const near = model.generate(promptIds(maxSeq - 14, vocab), { maxTokens: 50, stopTokens: [] });
      await near.text();
      expect([near.tokens.length, near.stopReason]).toEqual([14, 'context-full']);
      // maxTokens below the room left still rules.
      const few = model.generate(promptIds(maxSeq - 14, vocab), { maxTokens: 3, stopTokens: [] });
      await few.text();
      expect([few.tokens.length, few.stopReason]).toEqual([3, 'max-tokens']);
    } finally {
      model.dispose();
    }
  });
});

describe('a model without a vocabulary (MOON)', () => {
  const expected = readJson('moon-tiny', 'expected.json').cases[0];

  test('loads; logits(ids) and generate(ids) match the fixture; text is NoTokenizerError', async () => {
    const model = await loadModel(MOON, { threads: 1 });
    try {
      const ids: number[] = expected.prompt.ids;
      const logits = await model.logits(ids);
      const reference = readF32('moon-tiny', 'text0.logits.f32').subarray(9 * 512, 10 * 512);
      let worst = 0;
      for (let i = 0; i < 512; i++) worst = Math.max(worst, Math.abs(logits[i] - reference[i]));
      expect(worst).toBeLessThanOrEqual(readJson('moon-tiny', 'expected.json').tolerances.logits_abs_f16_activation_engine);
      const generation = model.generate(ids, { maxTokens: expected.greedy.max_new_tokens, temperature: 0 });
      await generation.text();
      expect(generation.tokens).toEqual(expected.greedy.tokens);
      for (const text of [() => model.generate('hello'), () => model.encode('hello')]) {
        expect(text).toThrow(NoTokenizerError);
        expect(text).toThrow(expect.objectContaining({ code: 'ERR_WEIGHTMAP_NO_TOKENIZER', path: MOON }));
      }
    } finally {
      model.dispose();
    }
  });

  test('the CLI: one line with the code and a --tokenizer hint, exit code 2', async () => {
    const r = await runCli(['generate', MOON, 'hello', '--threads', '1']);
    expect({ exitCode: r.exitCode, stdout: r.stdout }).toEqual({ exitCode: 2, stdout: '' });
    expect(r.stderr).toBe(`weightmap: ERR_WEIGHTMAP_NO_TOKENIZER: ${MOON} has no tokenizer in or beside it: pass --tokenizer PATH\n`);
  });
});

describe('misuse is refused early', () => {
  afterEach(() => jest.restoreAllMocks());

  test.each([
    ['decoder', STORIES, DecoderEngine, 512],
    ['gpt', TLLM, GptEngine, 128],
    ['phi', MOON, MoondreamEngine, 2048],
  ] as const)('%s: contextLength past the maximum is a RangeError (ERR_OUT_OF_RANGE) before the engine loads', async (_name, file, engine, maxSeq) => {
    const load = jest.spyOn(engine, 'load');
    const error = await loadModel(file, { contextLength: maxSeq + 1 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RangeError);
    expect(error).toMatchObject({ code: 'ERR_OUT_OF_RANGE', message: `contextLength ${maxSeq + 1} exceeds this model's maximum ${maxSeq}; pass ${maxSeq} or 'max'` });
    expect(load).not.toHaveBeenCalled();
  });

  test.each([
    ['decoder', STORIES, 512],
    ['gpt', TLLM, 128],
    ['phi', MOON, 2048],
  ] as const)("%s: contextLength 'max' is the model's maximum, the default min(maximum, 4096)", async (_name, file, maxSeq) => {
    const max = await loadModel(file, { threads: 1, contextLength: 'max' });
    try {
      expect({ context: max.contextLength, info: max.info.contextLength, max: max.info.maxContextLength }).toEqual({ context: maxSeq, info: maxSeq, max: maxSeq });
    } finally {
      max.dispose();
    }
    const byDefault = await loadModel(file, { threads: 1 });
    try {
      expect(byDefault.contextLength).toBe(Math.min(maxSeq, 4096));
    } finally {
      byDefault.dispose();
    }
    await expect(loadModel(file, { contextLength: 'all' as 'max' })).rejects.toThrow(/contextLength must be an integer >= 1 or 'max', got all/);
  });

  test("loadModel('') is an argument error naming the empty path", async () => {
    await expect(loadModel('')).rejects.toThrow(TypeError);
    await expect(loadModel('')).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_VALUE', message: expect.stringContaining('empty string') });
  });

  test('RangeErrors from the API carry ERR_OUT_OF_RANGE', async () => {
    const model = await loadModel(STORIES, { threads: 1, contextLength: 16 });
    try {
      const caught: unknown[] = [];
      const attempt = async (fn: () => unknown) => {
        try {
          await fn();
        } catch (e) {
          caught.push(e);
        }
      };
      await attempt(() => model.logits([]));
      await attempt(() => model.logits(promptIds(17, 512)));
      await attempt(() => model.generate([1], { topP: 2 }));
      await attempt(() => model.generate([1], { maxTokens: -1 }));
      await attempt(() => model.generate([600]));
      await attempt(() => formatModule('onnx' as 'gguf'));
      await attempt(() => loadModel(STORIES, { threads: -1 }));
      await attempt(() => loadModel(STORIES, { kvCache: 'bf16' as 'f16' }));
      expect(caught).toHaveLength(8);
      for (const e of caught) expect([e instanceof RangeError, (e as { code?: string }).code]).toEqual([true, 'ERR_OUT_OF_RANGE']);
    } finally {
      model.dispose();
    }
  });

  test('lib/ makes its RangeErrors through rangeError() only', () => {
    const offenders: string[] = [];
    const walk = (dir: string) => {
      for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
        const p = path.join(dir, e.name);
        if (e.isDirectory()) walk(p);
        else if (p.endsWith('.ts') && !p.endsWith(path.join('lib', 'base', 'errors.ts')) && /new RangeError\(/.test(fs.readFileSync(p, 'utf8'))) offenders.push(p);
      }
    };
    walk(path.resolve(__dirname, '..', '..', 'lib'));
    expect(offenders).toEqual([]);
  });
});
