/**
 * `weightmap serve` in process: it binds 127.0.0.1 by default and prints the port it got (port 0),
 * answers requests, and on SIGTERM finishes the stream in flight, refuses new connections, then
 * returns.
 */
import * as http from 'node:http';
import OpenAI from 'openai';
import { main } from '../../lib/cli/main';
import { fixture } from '../helpers/fixtures';
import { until } from './server-helpers';

describe('weightmap serve', () => {
  it('prints the bound address, serves, and drains on SIGTERM', async () => {
    const printed: string[] = [];
    const write = process.stdout.write.bind(process.stdout);
    const writeErr = process.stderr.write.bind(process.stderr);
    process.stdout.write = ((chunk: string | Uint8Array) => (printed.push(chunk.toString()), true)) as typeof process.stdout.write;
    process.stderr.write = ((_chunk: string | Uint8Array) => true) as typeof process.stderr.write;
    const before = new Set(process.listeners('SIGTERM'));
    const serving = main(['node', 'weightmap', 'serve', fixture('llama-stories260k', 'stories260K.bin'), '--tokenizer', fixture('llama-stories260k', 'tok512.bin'), '--port', '0', '--api-key', 'k']);
    try {
      await until(() => printed.join('').includes('listening on'));
      const match = /listening on (http:\/\/127\.0\.0\.1:(\d+))/.exec(printed.join(''));
      expect(match).not.toBeNull();
      const client = new OpenAI({ apiKey: 'k', baseURL: `${match![1]}/v1`, maxRetries: 0 });
      expect((await client.models.list()).data[0].id).toBe('stories260K.bin');

      const stream = await client.completions.create({ model: 'stories260K.bin', prompt: [1], max_tokens: 60, temperature: 0, stream: true });
      const iterator = stream[Symbol.asyncIterator]();
      let text = (await iterator.next()).value!.choices[0].text;
      // SIGTERM as the serve command sees it (only its own listener: the test runner's stay out of it).
      const added = process.listeners('SIGTERM').filter((listener) => !before.has(listener));
      expect(added).toHaveLength(1);
      (added[0] as () => void)();
      // The stream in flight runs to its end...
      for (let next = await iterator.next(); !next.done; next = await iterator.next()) text += next.value.choices[0]?.text ?? '';
      const reference = await client.completions.create({ model: 'stories260K.bin', prompt: [1], max_tokens: 60, temperature: 0 }).catch((error: Error) => error);
      // ...new requests are refused (the listening socket is closed, or a kept-alive connection gets 503).
      expect(reference).toBeInstanceOf(Error);
      await serving;
      expect(text.length).toBeGreaterThan(100);
      const refused = await new Promise<string>((resolve) => {
        http.get(`${match![1]}/health`, () => resolve('answered')).on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'));
      });
      expect(refused).toBe('ECONNREFUSED');
    } finally {
      process.stdout.write = write;
      process.stderr.write = writeErr;
    }
  });
});
