/**
 * loadModel end to end on the fixtures: stories260K's golden greedy text from its three formats,
 * the ajc1 Qwen3 prompt ids / logits / greedy chat reply, the TLLM and Moondream text engines,
 * KV-cache reuse across chat turns, abort, early exit, concurrency, the event loop staying free,
 * and the errors of misuse.
 */
import * as fs from 'node:fs';
import * as nodePath from 'node:path';
import { convert } from '../../lib/formats/writing/convert';
import { AbortError, DisposedError, NoTokenizerError, UnsupportedError } from '../../lib/base/errors';
import { loadModel, type Model } from '../../lib/models/model';
import type { DecodeOptions, StreamDecoder, Tokenizer } from '../../lib/tokenizers';
import { loadTokenizer } from '../../lib/tokenizer-loading';
import { fixture, readF32, readJson, tempDir } from '../helpers/fixtures';

const stories = (...p: string[]) => fixture('llama-stories260k', ...p);
const golden = fs.readFileSync(stories('expected_greedy_200steps.txt'), 'utf8');
const storiesExpected = readJson('llama-stories260k', 'expected.json');
const qwen = readJson('ajc1-qwen3-tiny', 'expected.json');
const qwenCase = qwen.cases[0];
const qwenPath = fixture('ajc1-qwen3-tiny', 'model.bin');

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]));
  return worst;
}

/** Ids as text ("12 7 93"), for the fixtures that come without a vocabulary (TLLM, MOON). */
function idTokenizer(vocabSize: number): Tokenizer {
  return {
    kind: 'tllm',
    vocabSize,
    specialIds: {},
    truncation: undefined,
    encode: (text: string) => text.split(/\s+/).filter(Boolean).map(Number),
    decode: (ids: ArrayLike<number>) => Array.from(ids).map((id) => ` ${id}`).join(''),
    idToToken: (id: number) => String(id),
    tokenToId: (token: string) => Number(token),
    isSpecial: () => false,
    createStreamDecoder: (_options?: DecodeOptions): StreamDecoder => ({ push: (id: number) => ` ${id}`, flush: () => '' }),
  };
}

describe('stories260K (llama2.c golden output)', () => {
  it.each(['stories260K.bin', 'stories260K.gguf', 'sepweight'])('%s: greedy 200 tokens after BOS are llama2.c\'s text', async (name) => {
    const model = await loadModel(stories(name), { threads: 1 });
    try {
      expect(model.encode('')).toEqual([storiesExpected.greedy.start_token]);
      const gen = model.generate('', { maxTokens: 200 });
      expect(await gen.text()).toBe(golden);
      expect(gen.tokens).toEqual(storiesExpected.greedy.tokens);
      expect(gen.stopReason).toBe('max-tokens');
      expect(model.stopTokens).toEqual([1, 2]);
    } finally {
      model.dispose();
    }
  });

  it('kvCache reaches the sessions: f32 is the default for f32 weights, q8_0 rounds keys and values', async () => {
    const ids = storiesExpected.greedy.tokens.slice(0, 40);
    const logits = async (kvCache?: 'f32' | 'q8_0') => {
      const model = await loadModel(stories('stories260K.bin'), { threads: 1, ...(kvCache ? { kvCache } : {}) });
      try {
        return await model.logits(ids);
      } finally {
        model.dispose();
      }
    };
    const [byDefault, f32, q8] = [await logits(), await logits('f32'), await logits('q8_0')];
    expect(Array.from(byDefault)).toEqual(Array.from(f32));
    expect(maxAbsDiff(q8, f32)).toBeGreaterThan(1e-3);
  });

  it('an HF safetensors folder converted from the .bin (q/k permuted to half pairs) gives the same text', async () => {
    const { dir, cleanup } = tempDir();
    try {
      await convert(stories('stories260K.bin'), nodePath.join(dir, 'model.safetensors'), { to: 'safetensors' });
      const model = await loadModel(dir, { threads: 1, tokenizer: stories('tok512.bin') });
      try {
        expect(model.info.format).toBe('safetensors');
        expect(await model.generate('', { maxTokens: 200 }).text()).toBe(golden);
      } finally {
        model.dispose();
      }
    } finally {
      cleanup();
    }
  });

  it('logits(ids) after a prefill equal the fixture\'s step logits', async () => {
    const model = await loadModel(stories('stories260K.bin'), { threads: 1 });
    try {
      const all = readF32('llama-stories260k', 'greedy_logits.f32');
      const tokens = storiesExpected.greedy.tokens as number[];
      for (const n of [0, 1, 17]) {
        const logits = await model.logits([1, ...tokens.slice(0, n)]);
        expect(maxAbsDiff(logits, all.subarray(n * 512, (n + 1) * 512))).toBeLessThan(1e-3);
      }
    } finally {
      model.dispose();
    }
  });

  it('continues a text prompt with the leading space kept', async () => {
    const model = await loadModel(stories('stories260K.bin'), { threads: 1 });
    try {
      const prompt = 'Once upon a time,';
      const text = await model.generate(prompt, { maxTokens: 10 }).text();
      expect(golden.startsWith(prompt + text)).toBe(true);
      expect(text.startsWith(' ')).toBe(true);
    } finally {
      model.dispose();
    }
  });
});

describe('ajc1 Qwen3 (qwen3.c)', () => {
  let model: Model;
  beforeAll(async () => {
    model = await loadModel(qwenPath, { threads: 1 });
  });
  afterAll(() => model.dispose());

  it('finds the .tokenizer and the Qwen3 template; the rendered prompt encodes to the fixture ids', () => {
    expect(model.chatTemplate?.kind).toBe('qwen3');
    const text = model.renderChat([{ role: 'user', content: qwenCase.prompt.user_text }]);
    expect(text).toBe(qwenCase.prompt.text);
    expect(model.tokenizer.encode(text, { addSpecialTokens: false })).toEqual(qwenCase.prompt.ids);
    expect(model.stopTokens).toEqual([151643, 151645]);
  });

  it('logits after the prompt are within the Q8_0-activation tolerance', async () => {
    const logits = await model.logits(qwenCase.prompt.ids);
    expect(maxAbsDiff(logits, readF32('ajc1-qwen3-tiny', qwenCase.logits_file.path))).toBeLessThan(qwen.tolerances.logits_abs_q8_activation_engine);
  });

  it('chat() replies with the fixture\'s greedy continuation and stops on <|im_end|>', async () => {
    const gen = model.chat([{ role: 'user', content: qwenCase.prompt.user_text }], { maxTokens: 24 });
    const text = await gen.text();
    expect(gen.tokens).toEqual(qwenCase.greedy.tokens);
    expect(gen.stopReason).toBe('stop-token');
    expect(text).toBe((qwenCase.greedy.text as string).replace(/<\|im_end\|>$/, ''));
  });

  it('generate() over the rendered template text gives the same tokens', async () => {
    const ids = model.tokenizer.encode(qwenCase.prompt.text, { addSpecialTokens: false });
    const gen = model.generate(ids, { maxTokens: 24 });
    await gen.text();
    expect(gen.tokens).toEqual(qwenCase.greedy.tokens);
  });

  it('a second turn reuses the cache and gives what a fresh model gives', async () => {
    const first = [{ role: 'user' as const, content: qwenCase.prompt.user_text }];
    const reply = await model.chat(first, { maxTokens: 24 }).text();
    const second = [...first, { role: 'assistant' as const, content: reply }, { role: 'user' as const, content: 'And in Rome?' }];
    const warm = model.chat(second, { maxTokens: 12 });
    const warmText = await warm.text();
    const fresh = await loadModel(qwenPath, { threads: 1 });
    try {
      const cold = fresh.chat(second, { maxTokens: 12 });
      expect(await cold.text()).toBe(warmText);
      expect(cold.tokens).toEqual(warm.tokens);
    } finally {
      fresh.dispose();
    }
  });

  it('with the HF tokenizer folder, renders the model\'s own Jinja template and replies the same', async () => {
    const hf = await loadModel(qwenPath, { threads: 1, tokenizer: fixture('tokenizers', 'qwen3') });
    try {
      expect(hf.chatTemplate?.kind).toBe('jinja');
      const messages = [{ role: 'user' as const, content: qwenCase.prompt.user_text }];
      expect(hf.renderChat(messages, { enableThinking: false })).toBe(qwenCase.prompt.text);
      const gen = hf.chat(messages, { maxTokens: 24 });
      await gen.text();
      expect(gen.tokens).toEqual(qwenCase.greedy.tokens);
    } finally {
      hf.dispose();
    }
  });

  it('a ChatSession remembers the conversation and answers like chat() over the same messages', async () => {
    const session = model.createChatSession({ systemPrompt: 'You are terse.' });
    const chunks: string[] = [];
    const first = await session.prompt(qwenCase.prompt.user_text, { maxTokens: 24, onTextChunk: (t) => chunks.push(t) });
    expect(chunks.join('')).toBe(first);
    const second = await session.prompt('And in Rome?', { maxTokens: 8 });
    expect(session.messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user', 'assistant']);
    expect(session.messages[2].content).toBe(first);
    expect(await model.chat(session.messages.slice(0, 4), { maxTokens: 8 }).text()).toBe(second);
    const controller = new AbortController();
    controller.abort();
    await expect(session.prompt('stop', { signal: controller.signal })).rejects.toBeInstanceOf(AbortError);
    expect(session.messages.length).toBe(5); // an aborted turn leaves no trace
    session.reset();
    expect(session.messages).toEqual([{ role: 'system', content: 'You are terse.' }]);
  });

  it('samples reproducibly: same seed same tokens, another seed other tokens', async () => {
    const messages = [{ role: 'user' as const, content: 'Tell me a story.' }];
    const run = async (seed: number) => {
      const gen = model.chat(messages, { temperature: 1.5, topK: 0, topP: 1, seed, maxTokens: 12, stopTokens: [] });
      await gen.text();
      return gen.tokens;
    };
    const a = await run(1);
    expect(await run(1)).toEqual(a);
    expect(await run(2)).not.toEqual(a);
  });
});

describe('the other text engines', () => {
  it('TLLM: greedy continuation of the fixture prompt (gpt engine)', async () => {
    const c = readJson('tllm-tiny', 'expected.json').cases[0];
    const model = await loadModel(fixture('tllm-tiny', 'model.tllm'), { threads: 1, tokenizer: idTokenizer(100) });
    try {
      const gen = model.generate(c.prompt.ids, { maxTokens: 16, stopTokens: [2] });
      await gen.text();
      expect(gen.tokens).toEqual(c.greedy.tokens);
    } finally {
      model.dispose();
    }
  });

  it('Moondream: greedy continuation of the text-only prompt (phi engine)', async () => {
    const c = readJson('moon-tiny', 'expected.json').cases[0];
    const model = await loadModel(fixture('moon-tiny', 'model.moon'), { threads: 1, tokenizer: idTokenizer(512) });
    try {
      expect(model.stopTokens).toEqual([511]);
      const gen = model.generate(c.prompt.ids, { maxTokens: 12 });
      expect(await gen.text()).toBe(c.greedy.tokens.map((t: number) => ` ${t}`).join(''));
      expect(gen.tokens).toEqual(c.greedy.tokens);
    } finally {
      model.dispose();
    }
  });

  it('refuses BERT with a pointer to loadEmbedder', async () => {
    await expect(loadModel(fixture('embd-minilm-tiny', 'model.weights'))).rejects.toThrow(UnsupportedError);
    await expect(loadModel(fixture('embd-minilm-tiny', 'model.weights'))).rejects.toThrow(/loadEmbedder/);
  });
});

describe('control', () => {
  it('abort stops a generation with AbortError and the model carries on', async () => {
    const model = await loadModel(stories('stories260K.bin'), { threads: 1 });
    try {
      const controller = new AbortController();
      const gen = model.generate('', { maxTokens: 200, signal: controller.signal });
      let pieces = 0;
      await expect(
        (async () => {
          for await (const _ of gen) if (++pieces === 5) controller.abort();
        })(),
      ).rejects.toBeInstanceOf(AbortError);
      expect(pieces).toBe(5);
      expect(await model.generate('', { maxTokens: 200 }).text()).toBe(golden);
    } finally {
      model.dispose();
    }
  });

  it('breaking out early leaves the model ready; the next prompt reuses the cached prefix correctly', async () => {
    const model = await loadModel(stories('stories260K.bin'), { threads: 1 });
    try {
      let text = '';
      for await (const piece of model.generate('', { maxTokens: 200 })) {
        text += piece.text;
        if (text.length > 40) break;
      }
      expect(golden.startsWith(text)).toBe(true);
      expect(await model.generate('', { maxTokens: 200 }).text()).toBe(golden);
    } finally {
      model.dispose();
    }
  });

  it('runs concurrent generations on one model and on two models', async () => {
    const a = await loadModel(stories('stories260K.bin'), { threads: 1 });
    const b = await loadModel(stories('stories260K.gguf'), { threads: 1 });
    try {
      const sampled = (m: Model, seed: number) => m.generate('Lily', { temperature: 1, seed, maxTokens: 60 });
      const sequential = [await sampled(a, 1).text(), await sampled(a, 2).text()];
      const [g1, g2, g3, g4] = [a.generate('', { maxTokens: 200 }), sampled(a, 1), sampled(a, 2), b.generate('', { maxTokens: 200 })];
      const texts = await Promise.all([g1.text(), g2.text(), g3.text(), g4.text()]);
      expect(texts).toEqual([golden, ...sequential, golden]);
    } finally {
      a.dispose();
      b.dispose();
    }
  });

  it('runs concurrent generations of one model to their end, each its own sampled sequence', async () => {
    // Qwen3-tiny's 151936-row classifier makes each token a few milliseconds of engine work (in the
    // engine's worker: how long the loop waits meanwhile is measured by scripts/bench/load.js).
    const model = await loadModel(fixture('ajc1-qwen3-tiny', 'model.bin'), { threads: 1 });
    try {
      const generations = [0, 1, 2].map((seed) => model.generate('Once upon a time', { maxTokens: 240, temperature: 0.8, seed, stopTokens: [] }));
      await Promise.all(generations.map((g) => g.text()));
      expect(generations.map((g) => g.tokens.length)).toEqual([240, 240, 240]);
      const again = model.generate('Once upon a time', { maxTokens: 240, temperature: 0.8, seed: 1, stopTokens: [] });
      await again.text();
      expect(again.tokens).toEqual(generations[1].tokens);
    } finally {
      model.dispose();
    }
  });

  it('throws typed errors for misuse and after dispose', async () => {
    const model = await loadModel(stories('stories260K.bin'), { threads: 1, contextLength: 64 });
    expect(model.contextLength).toBe(64);
    expect(() => model.generate([1, 512])).toThrow(RangeError);
    expect(() => model.generate([1, -1])).toThrow(RangeError);
    expect(() => model.generate(Array(65).fill(5))).toThrow(/context length 64/);
    expect(() => model.generate(5 as unknown as string)).toThrow(TypeError);
    expect(() => model.chat([{ role: 'user', content: 'hi' }])).toThrow(UnsupportedError); // llama2.c has no template
    expect(() => model.createChatSession()).toThrow(UnsupportedError);
    await expect(model.logits([])).rejects.toThrow(RangeError);
    const running = model.generate('', { maxTokens: 60 });
    await running.next();
    model.dispose();
    await expect(running.text()).rejects.toThrow(DisposedError);
    expect(() => model.generate('')).toThrow(DisposedError);
    await expect(model.logits([1])).rejects.toThrow(DisposedError);
    model.dispose(); // twice is fine
  });

  it('rejects bad load options; without a tokenizer it runs on ids and refuses text', async () => {
    await expect(loadModel(stories('stories260K.bin'), { contextLength: 100000 })).rejects.toThrow(/exceeds this model's maximum 512/);
    await expect(loadModel(stories('stories260K.bin'), { threads: -1 })).rejects.toThrow(RangeError);
    await expect(loadModel(stories('stories260K.bin'), { quant: 'q4' as 'q8_0' })).rejects.toThrow(RangeError);
    const { dir, cleanup } = tempDir();
    try {
      fs.copyFileSync(stories('stories260K.bin'), nodePath.join(dir, 'stories260K.bin')); // no tok512.bin beside it
      const bare = await loadModel(nodePath.join(dir, 'stories260K.bin'), { threads: 1 });
      try {
        expect(() => bare.generate('Once')).toThrow(NoTokenizerError);
        expect(() => bare.generate('Once')).toThrow(expect.objectContaining({ code: 'ERR_WEIGHTMAP_NO_TOKENIZER' }));
        const ids = bare.generate([1], { maxTokens: 40 });
        await ids.text();
        const tokenizer = await loadTokenizer(stories('tok512.bin'));
        expect(golden.startsWith(tokenizer.decode(ids.tokens))).toBe(true);
        expect(ids.tokens).toHaveLength(40);
      } finally {
        bare.dispose();
      }
    } finally {
      cleanup();
    }
    await expect(loadModel(stories('stories260K.bin'), { tokenizer: fixture('tokenizers', 'llama2c', 'tokenizer.bin') })).rejects.toThrow(/more tokens than the model/);
  });
});
