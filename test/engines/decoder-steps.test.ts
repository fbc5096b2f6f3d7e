/**
 * eval(ids, 'steps') (DecoderSession::Eval's `steps`, speculative decoding's verification): every
 * row's logits bitwise what a one-token eval at its position gives, on the f32 llama2.c model, the
 * llama.cpp-quantized GGUFs (the ggml kernels' tiles over several rows), Q8_0 quantized at load,
 * and with the q8_0 KV cache; and the cache it leaves is the one-token steps' (the next eval equal).
 */
import { DecoderEngine } from '../../lib/engines/decoder';
import { readWeights } from '../../lib/formats';
import { closeWeights } from '../../lib/addon/weights';
import { fixture, readJson } from '../helpers/fixtures';
import { storiesExpected } from './decoder-helpers';

const GGUF = ['llama-ropefreqs', 'qwen2-bias', 'qwen3-qknorm'].flatMap((folder) =>
  (readJson('gguf-quants', folder, 'expected.json').variants as { file: string; cases: { prompt: { ids: number[] } }[] }[]).map(
    (v) => [`${folder}/${v.file}`, fixture('gguf-quants', folder, v.file), v.cases[0].prompt.ids, {}] as const,
  ),
);
const stories = fixture('llama-stories260k', 'stories260K.bin');
const storyIds = storiesExpected().tokens;
const CASES = [
  ['stories260K f32', stories, storyIds.slice(0, 20), {}],
  ['stories260K, Q8_0 at load, q8_0 KV cache', stories, storyIds.slice(0, 20), { quant: 'q8_0', kvCache: 'q8_0' }],
  ['stories260K, f16 KV cache', stories, storyIds.slice(0, 20), { kvCache: 'f16' }],
  ...GGUF,
] as const;

describe.each(CASES)('%s', (_name, path, prompt, options) => {
  test.each([2, 5, 9])('%i rows as steps are bitwise the one-token evals', async (rows) => {
    const weights = await readWeights(path);
    const { quant, kvCache } = options as { quant?: 'q8_0'; kvCache?: 'f16' | 'q8_0' };
    const engine = await DecoderEngine.load(weights, { threads: 2, ...(quant ? { quant } : {}) });
    try {
      const vocab = engine.config.vocabSize;
      const next = Array.from({ length: rows + 1 }, (_, i) => (prompt[i % prompt.length] * 7 + i) % vocab);
      const a = engine.createSession({ contextLength: 64, ...(kvCache ? { kvCache } : {}) });
      const b = engine.createSession({ contextLength: 64, ...(kvCache ? { kvCache } : {}) });
      await a.eval(prompt);
      await b.eval(prompt);
      const steps = await a.evalSteps(next.slice(0, rows));
      expect(steps.length).toBe(rows * vocab);
      for (let i = 0; i < rows; i++) {
        const one = await b.eval([next[i]]);
        expect(Buffer.from(steps.buffer, steps.byteOffset + i * vocab * 4, vocab * 4).equals(Buffer.from(one.buffer, one.byteOffset, vocab * 4))).toBe(true);
      }
      // The caches hold the same: the next token's logits are equal too.
      const after = [await a.eval([next[rows]]), await b.eval([next[rows]])];
      expect(Buffer.from(after[0].buffer).equals(Buffer.from(after[1].buffer))).toBe(true);
      a.dispose();
      b.dispose();
    } finally {
      engine.dispose();
      closeWeights(weights);
    }
  });
});
