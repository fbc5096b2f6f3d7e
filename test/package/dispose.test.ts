/**
 * Explicit resource management: models, embedders, engine sessions and mapped files have
 * [Symbol.dispose] and [Symbol.asyncDispose], so `using` / `await using` release them when the
 * scope ends, also when it ends by throwing.
 */
import * as fs from 'node:fs';
import { loadEmbedder, type Embedder } from '../../lib/models/embedder';
import { DecoderEngine, type DecoderEngineSession } from '../../lib/engines/decoder';
import { GptEngine, type GptEngineSession } from '../../lib/engines/gpt';
import { DisposedError } from '../../lib/base/errors';
import { readWeights } from '../../lib/formats';
import { mapFile, type MappedSource } from '../../lib/addon/mapping';
import { loadModel, type Model } from '../../lib/models/model';
import { closeWeights } from '../../lib/addon/weights';
import { fixture } from '../helpers/fixtures';

const stories = fixture('llama-stories260k', 'stories260K.bin');
const golden = fs.readFileSync(fixture('llama-stories260k', 'expected_greedy_200steps.txt'), 'utf8');

test('await using disposes a model at the end of its block', async () => {
  let escaped: Model;
  {
    await using model = await loadModel(stories, { threads: 1 });
    escaped = model;
    const text = await model.generate('', { maxTokens: 16 }).text();
    expect(text.length).toBeGreaterThan(0);
    expect(golden.startsWith(text)).toBe(true);
  }
  expect(escaped.disposed).toBe(true);
  expect(() => escaped.generate('')).toThrow(DisposedError);
});

test('await using disposes a model when its block throws', async () => {
  let escaped: Model | undefined;
  const failing = async () => {
    await using model = await loadModel(stories, { threads: 1 });
    escaped = model;
    throw new Error('thrown inside the block');
  };
  await expect(failing()).rejects.toThrow('thrown inside the block');
  expect(escaped?.disposed).toBe(true);
});

test('await using disposes an embedder', async () => {
  let escaped: Embedder;
  {
    await using embedder = await loadEmbedder(fixture('embd-minilm-tiny', 'model.weights'), { threads: 1 });
    escaped = embedder;
    const [vector] = await embedder.embed(['a short sentence']);
    expect(vector.length).toBe(32); // the fixture's hidden size
  }
  expect(escaped.disposed).toBe(true);
  await expect(escaped.embed(['again'])).rejects.toThrow(DisposedError);
});

test('using closes a mapped file', () => {
  let escaped: MappedSource;
  {
    using source = mapFile(stories);
    escaped = source;
    expect(source.byteLength).toBe(fs.statSync(stories).size);
  }
  expect(escaped.closed).toBe(true);
  expect(escaped.byteLength).toBe(0);
});

test('using disposes decoder and KV sessions', async () => {
  const weights = await readWeights(stories);
  const engine = await DecoderEngine.load(weights, { threads: 1 });
  const tllm = await readWeights(fixture('tllm-tiny', 'model.tllm'));
  const gpt = await GptEngine.load(tllm, { threads: 1 });
  try {
    let decoderSession: DecoderEngineSession;
    let gptSession: GptEngineSession;
    {
      using a = engine.createSession({ contextLength: 16 });
      using b = gpt.createSession();
      decoderSession = a;
      gptSession = b;
      expect(a.disposed).toBe(false);
      expect(b.position).toBe(0);
    }
    expect(decoderSession.disposed).toBe(true);
    expect(() => gptSession.truncate(0)).toThrow(DisposedError);
  } finally {
    gpt.dispose();
    engine.dispose();
    closeWeights(tllm);
    closeWeights(weights);
  }
});
