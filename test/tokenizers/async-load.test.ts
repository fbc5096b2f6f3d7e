/**
 * loadTokenizer of a 151k-token vocabulary (an ajc1 `.tokenizer`, vocab.json + merges.txt: a few
 * hundred milliseconds of work) lets the event loop run while it builds, and builds the same
 * tokenizer as loadTokenizerSync.
 */
import { loadTokenizer, loadTokenizerSync } from '../../lib/tokenizers';
import { watchEventLoop } from '../helpers/event-loop';
import { fixture } from '../helpers/fixtures';

const SOURCES = [fixture('ajc1-qwen3-tiny', 'model.bin.tokenizer'), fixture('tokenizers', 'qwen3')];

test.each(SOURCES)('the event loop turns while %s loads', async (PATH) => {
  const watch = watchEventLoop();
  const started = performance.now();
  const async = await loadTokenizer(PATH);
  const took = performance.now() - started;
  const { ticks, longest } = watch.stop();
  expect(ticks).toBeGreaterThan(10);
  // Built in one go, the longest wait would be the whole load; in slices it is a fraction of it.
  expect(longest).toBeLessThan(took / 2);
  const sync = loadTokenizerSync(PATH);
  for (const text of ['Hello, world!', '  leading spaces and\ttabs\n', 'naïve café 東京 🙂', '<|im_start|>user\nhi<|im_end|>']) {
    expect(async.encode(text)).toEqual(sync.encode(text));
  }
});
