/**
 * Issue #23 item 1 as reported: a GGUF made with `weightmap convert` from an HF folder whose
 * tokenizer_config.json holds a hostile chat_template, served by `weightmap serve` in a child
 * process (so that an abort such as V8's fatal "invalid size" would show as the child's death).
 * The chat request is a 400 naming `messages`, /health answers during a bounded storm and after,
 * and SIGTERM ends the server; `convert --to ajc1`, which renders the template, refuses it in
 * bounded time.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ChatTemplateError } from '../../lib/chat-template/budget';
import { convert } from '../../lib/formats/writing/convert';
import { fixture, readJson, tempDir } from '../helpers/fixtures';
import { rawRequest } from './server-helpers';

const REPO = path.join(__dirname, '..', '..');
const HOSTILE = {
  hugeRange: '{% for i in range(10**9) %}{% endfor %}{{ messages[0].content }}',
  nestedRanges: '{% for i in range(20000) %}{% for j in range(20000) %}{% endfor %}{% endfor %}{{ messages[0].content }}',
};

const tmp = tempDir('weightmap-hostile-cli-');
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  tmp.cleanup();
});

/** The fixture as an f32 HF folder with the Qwen3 tokenizer files and `template` as its chat_template. */
async function hfFolder(name: string, template: string): Promise<string> {
  const dir = path.join(tmp.dir, name);
  await convert(fixture('ajc1-qwen3-tiny', 'model.bin'), path.join(dir, 'model.safetensors'), { to: 'safetensors', dtype: 'f32' });
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) fs.rmSync(path.join(dir, f), { force: true });
  for (const f of ['vocab.json', 'merges.txt']) fs.copyFileSync(fixture('tokenizers', 'qwen3', f), path.join(dir, f));
  fs.writeFileSync(path.join(dir, 'tokenizer_config.json'), JSON.stringify({ ...readJson('tokenizers', 'qwen3', 'tokenizer_config.json'), chat_template: template }));
  return dir;
}

/** `weightmap serve FILE --port 0` in a child running the TypeScript sources; resolves with its origin. */
function serve(file: string): Promise<{ child: ChildProcess; origin: string }> {
  const child = spawn(process.execPath, ['-r', path.join(REPO, 'test/formats/fuzz/register-ts.js'), path.join(REPO, 'lib/cli/main.ts'), 'serve', file, '--port', '0', '--threads', '1'], {
    cwd: tmp.dir,
    env: { ...process.env, WEIGHTMAP_API_KEY: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk) => {
      out += chunk;
      const match = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (match) resolve({ child, origin: match[1] });
    });
    child.stderr!.on('data', (chunk) => (out += chunk));
    child.on('exit', (code, signal) => reject(new Error(`serve exited (${code ?? signal}) before listening: ${out}`)));
  });
}

const chat = (origin: string) =>
  rawRequest(origin, '/v1/chat/completions', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'model.gguf', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 2 }),
  });

describe.each(Object.entries(HOSTILE))('a GGUF whose chat template is %s', (name, template) => {
  it('convert --to ajc1 refuses it; weightmap serve answers 400, keeps /health answering, and ends on SIGTERM', async () => {
    const dir = await hfFolder(name, template);
    await expect(convert(dir, path.join(tmp.dir, `${name}.bin`), { to: 'ajc1', groupSize: 32 })).rejects.toThrow(ChatTemplateError);
    const gguf = path.join(tmp.dir, name, 'model.gguf');
    await convert(dir, gguf, { to: 'gguf' });
    const { child, origin } = await serve(gguf);
    const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
    const first = await chat(origin);
    expect(first.status).toBe(400);
    expect(first.body.error).toMatchObject({ type: 'invalid_request_error', param: 'messages' });
    const storm = Array.from({ length: 3 }, () => chat(origin));
    expect((await rawRequest(origin, '/health')).status).toBe(200);
    for (const r of await Promise.all(storm)) expect(r.status).toBe(400);
    expect((await rawRequest(origin, '/health')).status).toBe(200);
    child.kill('SIGTERM');
    expect(await exited).toEqual({ code: 0, signal: null });
  }, 300_000); // three conversions and a child that builds the 151k-token tokenizer, on a shared machine
});
