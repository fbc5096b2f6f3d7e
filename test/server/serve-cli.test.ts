/**
 * `weightmap serve` in process: it binds 127.0.0.1 by default and prints the port it got (port 0),
 * answers requests, and on SIGTERM finishes the stream in flight, refuses new connections, then
 * returns. Off loopback without an API key it refuses to start, before it loads or binds anything.
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import OpenAI from 'openai';
import { main } from '../../lib/cli/main';
import { runCli } from '../helpers/cli';
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
    const serving = main(['node', 'weightmap', 'serve', fixture('llama-stories260k', 'stories260K.bin'), '--tokenizer', fixture('llama-stories260k', 'tok512.bin'), '--port', '0', '--api-key', 'k', '--allowed-host', 'weightmap.lan', '--max-connections', '16']);
    try {
      await until(() => printed.join('').includes('listening on'));
      const match = /listening on (http:\/\/127\.0\.0\.1:(\d+))/.exec(printed.join(''));
      expect(match).not.toBeNull();
      const client = new OpenAI({ apiKey: 'k', baseURL: `${match![1]}/v1`, maxRetries: 0 });
      expect((await client.models.list()).data[0].id).toBe('stories260K.bin');
      // The chat page is on by default (no key needed for the page itself).
      const page = await fetch(`${match![1]}/`);
      expect([page.status, page.headers.get('content-type')]).toEqual([200, 'text/html; charset=utf-8']);
      // --allowed-host reaches the Host check.
      const statusFor = (host: string) =>
        new Promise<number>((resolve, reject) => {
          http.get(`${match![1]}/v1/models`, { headers: { Host: host, Authorization: 'Bearer k' }, agent: false }, (res) => resolve(res.resume().statusCode!)).on('error', reject);
        });
      expect(await statusFor(`weightmap.lan:${match![2]}`)).toBe(200);
      expect(await statusFor(`evil.example:${match![2]}`)).toBe(421);

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

  it('--models DIR: refused in one line, exit 2, when there is nothing to serve; --keep-alive takes durations', async () => {
    expect((await runCli(['serve', '--port', '0'])).stderr).toBe('weightmap: nothing to serve: name a MODEL, --embedder MODEL, --reranker MODEL or --models DIR\n');
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'weightmap-empty-models-'));
    try {
      fs.writeFileSync(path.join(empty, 'README.txt'), 'no model here');
      const none = await runCli(['serve', '--models', empty, '--port', '0']);
      expect({ exitCode: none.exitCode, stderr: none.stderr }).toEqual({ exitCode: 2, stderr: `weightmap: ${empty}: no model weightmap can serve in this folder\n` });
    } finally {
      fs.rmSync(empty, { recursive: true });
    }
    const bad = await runCli(['serve', '--models', '/nonexistent', '--keep-alive', 'soon']);
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toMatch(/--keep-alive.*'soon' is not a duration/);
  });

  it('refuses --host 0.0.0.0 without an API key in one line, exit 2, before loading the model', async () => {
    const missing = '/nonexistent/weightmap-model.bin';
    const env = process.env.WEIGHTMAP_API_KEY;
    delete process.env.WEIGHTMAP_API_KEY;
    try {
      for (const host of ['0.0.0.0', '::', '192.0.2.1']) {
        const refused = await runCli(['serve', missing, '--host', host, '--port', '0']);
        expect(refused.exitCode).toBe(2);
        expect(refused.stdout).toBe('');
        expect(refused.stderr).toMatch(/^weightmap: refusing to listen on \S+ without an API key: pass --api-key KEY[^\n]*--insecure-no-auth\n$/);
      }
      // With a key, or told --insecure-no-auth, it gets past the check: to the missing model (so nothing was bound).
      for (const extra of [['--api-key', 'k'], ['--insecure-no-auth']]) {
        const next = await runCli(['serve', missing, '--host', '0.0.0.0', '--port', '0', ...extra]);
        expect(next.stderr).toBe(`weightmap: no such file or folder: ${missing}\n`);
      }
      process.env.WEIGHTMAP_API_KEY = 'from-env';
      expect((await runCli(['serve', missing, '--host', '0.0.0.0', '--port', '0'])).stderr).toMatch(/no such file/);
    } finally {
      if (env === undefined) delete process.env.WEIGHTMAP_API_KEY;
      else process.env.WEIGHTMAP_API_KEY = env;
    }
  });

  it('--log-format json: one JSON line per request on stderr; --metrics-public: /metrics without the key; --no-ui: no page; SIGTERM returns with exit 0', async () => {
    const printed: string[] = [];
    const logged: string[] = [];
    const write = process.stdout.write.bind(process.stdout);
    const writeErr = process.stderr.write.bind(process.stderr);
    process.stdout.write = ((chunk: string | Uint8Array) => (printed.push(chunk.toString()), true)) as typeof process.stdout.write;
    process.stderr.write = ((chunk: string | Uint8Array) => (logged.push(chunk.toString()), true)) as typeof process.stderr.write;
    const before = new Set(process.listeners('SIGTERM'));
    const exitCode = process.exitCode;
    const serving = main(['node', 'weightmap', 'serve', fixture('llama-stories260k', 'stories260K.bin'), '--tokenizer', fixture('llama-stories260k', 'tok512.bin'), '--port', '0', '--api-key', 'k',
      '--log-format', 'json', '--metrics-public', '--drain-timeout', '5', '--no-ui']);
    try {
      await until(() => printed.join('').includes('listening on'));
      const origin = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(printed.join(''))![1];
      const client = new OpenAI({ apiKey: 'k', baseURL: `${origin}/v1`, maxRetries: 0 });
      const completion = await client.completions.create({ model: 'stories260K.bin', prompt: 'Once', max_tokens: 6, temperature: 0 });
      const metrics = await fetch(`${origin}/metrics`);
      expect(metrics.status).toBe(200);
      expect(await metrics.text()).toMatch(/^weightmap_generation_tokens_total\{model="stories260K.bin"\} 6$/m);
      expect((await fetch(`${origin}/v1/models`)).status).toBe(401);
      expect((await fetch(`${origin}/`, { headers: { Authorization: 'Bearer k' } })).status).toBe(404); // --no-ui: a path like any other
      await until(() => logged.join('').split('\n').filter((line) => line.startsWith('{')).length >= 4);
      const entries = logged.join('').split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line));
      expect(entries[0]).toMatchObject({ method: 'POST', path: '/v1/completions', model: 'stories260K.bin', status: 200, promptTokens: completion.usage!.prompt_tokens, completionTokens: 6 });
      expect(entries[1]).toMatchObject({ method: 'GET', path: '/metrics', status: 200 });
      expect(entries[2]).toMatchObject({ method: 'GET', path: '/v1/models', status: 401 });
      expect(entries[3]).toMatchObject({ method: 'GET', path: '/', status: 404 });
      for (const entry of entries) expect(typeof entry.ms).toBe('number');
      const added = process.listeners('SIGTERM').filter((listener) => !before.has(listener));
      expect(added).toHaveLength(1);
      (added[0] as () => void)();
      await serving;
      expect(process.exitCode ?? 0).toBe(exitCode ?? 0);
    } finally {
      process.stdout.write = write;
      process.stderr.write = writeErr;
    }
  });

  it('rejects a bad --log-format and a negative --drain-timeout (exit 2)', async () => {
    const model = fixture('llama-stories260k', 'stories260K.bin');
    for (const extra of [['--log-format', 'xml'], ['--drain-timeout', '-1']]) {
      const result = await runCli(['serve', model, '--port', '0', ...extra]);
      expect(result.exitCode).toBe(2);
      expect(result.stdout).toBe('');
    }
  });
});
