/**
 * loadModel on TLLM weights: the Model API over the gpt engine. Without vocab.txt + merges.txt
 * beside the file prompts are token ids; with them the TLLM tokenizer encodes text.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { loadModel } from '../../lib/models/model';
import { fixture, readF32, readJson, tempDir } from '../helpers/fixtures';

const expected = readJson('tllm-tiny', 'expected.json');
const kase = expected.cases[0];
const PROMPT: number[] = kase.prompt.ids;
const V = 100;

describe('loadModel on tllm-tiny', () => {
  test('token-id prompts: greedy generation and logits match the reference', async () => {
    const model = await loadModel(fixture('tllm-tiny', 'model.tllm'), { threads: 2 });
    try {
      expect(model.info.architecture).toBe('tllm');
      expect(model.contextLength).toBe(128);
      const generation = model.generate(PROMPT, { maxTokens: kase.greedy.max_new_tokens });
      await generation.text();
      expect(generation.tokens).toEqual(kase.greedy.tokens);
      const logits = await model.logits(PROMPT);
      const reference = readF32('tllm-tiny', 'case0.logits.f32').subarray((PROMPT.length - 1) * V);
      let worst = 0;
      for (let i = 0; i < V; i++) worst = Math.max(worst, Math.abs(logits[i] - reference[i]));
      expect(worst).toBeLessThanOrEqual(0.001);
      expect(() => model.generate('text without a vocabulary')).toThrow(TypeError);
    } finally {
      model.dispose();
    }
  });

  test('a prompt past max_sequence_length is a RangeError', async () => {
    const model = await loadModel(fixture('tllm-tiny', 'model.tllm'), { threads: 1 });
    try {
      expect(() => model.generate(new Array(129).fill(1))).toThrow(RangeError);
      await expect(model.logits(new Array(129).fill(1))).rejects.toThrow(RangeError);
      // The context ends the generation at 128 positions: prompt + generated <= max_sequence_length.
      const generation = model.generate(new Array(120).fill(1), { maxTokens: 50 });
      await generation.text();
      expect(generation.stopReason).toBe('context-full');
      expect(generation.tokens.length).toBe(128 - 120);
    } finally {
      model.dispose();
    }
  });

  test('with vocab.txt + merges.txt beside the weights, text prompts use the TLLM tokenizer', async () => {
    const { dir, cleanup } = tempDir('weightmap-tllm-');
    try {
      fs.symlinkSync(fixture('tllm-tiny', 'model.tllm'), path.join(dir, 'model.tllm'));
      // One letter per prompt id ("token id" lines); no merges, so each byte is one token.
      const letters = 'abcdefghijkl';
      fs.writeFileSync(path.join(dir, 'vocab.txt'), PROMPT.map((id, i) => `${letters[i]} ${id}`).join('\n') + '\n');
      fs.writeFileSync(path.join(dir, 'merges.txt'), '#version: 0.2\n');
      const model = await loadModel(path.join(dir, 'model.tllm'), { threads: 1 });
      try {
        expect(model.tokenizer.kind).toBe('tllm');
        expect(model.encode('ABCDEFGHIJKL')).toEqual(PROMPT);
        const generation = model.generate('abcdefghijkl', { maxTokens: 4 });
        await generation.text();
        expect(generation.tokens).toEqual(kase.greedy.tokens.slice(0, 4));
      } finally {
        model.dispose();
      }
    } finally {
      cleanup();
    }
  });
});
