/**
 * A decoder session's KV cache grows as positions fill (issue #23): nothing allocated before the
 * first call, then to the positions a call needs or twice those held, whichever is more, up to the
 * context (the engine's own count, allocatedCacheBytes, against that closed form); and growing
 * after a truncate keeps the rows it holds: the logits equal those of a session that did not grow.
 */
import { DecoderEngine } from '../../lib/engines/decoder';
import { llama2cFormat } from '../../lib/formats/containers/llama2c';
import { closeWeights, type ModelWeights } from '../../lib/addon/weights';
import { fixture } from '../helpers/fixtures';
import { storiesExpected } from './decoder-helpers';

const expected = storiesExpected();
// 2 (k, v) x 5 layers x 4 kv heads x head_dim 8 x 4 bytes (f32): one position.
const PER_POSITION = 2 * 5 * 4 * 8 * 4;

let weights: ModelWeights;
let engine: DecoderEngine;
beforeAll(async () => {
  weights = await llama2cFormat.read(fixture('llama-stories260k', 'stories260K.bin'));
  engine = await DecoderEngine.load(weights, { threads: 2 });
});
afterAll(() => {
  engine.dispose();
  closeWeights(weights);
});

const ids = [expected.bos, ...expected.tokens.slice(0, 59)];

test('allocates nothing up front, then grows by doubling (or to what a call needs) up to the context', async () => {
  const session = engine.createSession({ contextLength: 40 });
  expect(session.cacheBytes).toBe(40 * PER_POSITION);
  expect(session.allocatedCacheBytes).toBe(0);
  let position = 0;
  for (const [n, rows] of [
    [3, 3],
    [10, 13], // more than twice 3: to what the call needs
    [1, 26], // twice
    [2, 26],
    [11, 40], // twice would be 52: the context
    [13, 40],
  ]) {
    expect(session.allocatedCacheBytesFor(position + n)).toBe(rows * PER_POSITION);
    await session.eval(ids.slice(position, position + n));
    position += n;
    expect([position, session.allocatedCacheBytes]).toEqual([position, rows * PER_POSITION]);
  }
  session.dispose();
  expect(session.allocatedCacheBytes).toBe(0);
});

test('growing after a truncate keeps the rows held: the same logits as a session that did not grow', async () => {
  const grows = engine.createSession({ contextLength: 64 });
  const grown = engine.createSession({ contextLength: 64 });
  await grows.eval(ids.slice(0, 8));
  await grown.eval(ids.slice(0, 8));
  await grown.eval(ids.slice(8, 30)); // room for 30 already
  grows.truncate(2);
  grown.truncate(2);
  const a = await grows.eval(ids.slice(2, 20), { allLogits: true }); // grows from 8 to 20 rows, keeping 2
  const b = await grown.eval(ids.slice(2, 20), { allLogits: true });
  expect(grows.allocatedCacheBytes).toBe(20 * PER_POSITION);
  expect(grown.allocatedCacheBytes).toBe(30 * PER_POSITION);
  expect(Buffer.from(a.buffer).equals(Buffer.from(b.buffer))).toBe(true);
  grows.dispose();
  grown.dispose();
});
