/**
 * Usage errors are one line `weightmap: ...` on stderr with exit code 2 and no stack trace: bad
 * option values (commander's InvalidArgumentError), a missing path, an empty file or folder (named
 * as what was found). A model of the wrong kind says which command to use.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { runCli } from '../helpers/cli';
import { fixture, tempDir } from '../helpers/fixtures';

const BIN = fixture('llama-stories260k', 'stories260K.bin');
const EMBD = fixture('embd-minilm-tiny', 'model.weights');

const tmp = tempDir('weightmap-cli-usage-');
afterAll(() => tmp.cleanup());

/** The run failed with exactly one line on stderr, matching `pattern`, nothing on stdout. */
function expectOneLine(r: { stdout: string; stderr: string; exitCode: number }, exitCode: number, pattern: RegExp): void {
  expect({ exitCode: r.exitCode, stdout: r.stdout }).toEqual({ exitCode, stdout: '' });
  expect(r.stderr.endsWith('\n')).toBe(true);
  expect(r.stderr.trimEnd().split('\n')).toEqual([expect.stringMatching(pattern)]);
  expect(r.stderr).toMatch(/^weightmap: /);
}

describe('bad option values: one line, exit code 2', () => {
  const cores = os.availableParallelism?.() ?? os.cpus().length;
  test.each([
    [['generate', BIN, 'x', '--max-tokens', '-5'], /'--max-tokens <n>' argument '-5' is invalid\. expected an integer >= 0$/],
    [['generate', BIN, 'x', '--max-tokens', '1.5'], /'--max-tokens <n>' argument '1\.5' is invalid\. expected an integer >= 0$/],
    [['generate', BIN, 'x', '--temperature', 'abc'], /'--temperature <t>' argument 'abc' is invalid\. expected a number >= 0$/],
    [['generate', BIN, 'x', '--top-k', '-3'], /'--top-k <k>' argument '-3' is invalid/],
    [['generate', BIN, 'x', '--top-p', '2'], /'--top-p <p>' argument '2' is invalid\. expected a number in \[0, 1\]$/],
    [['generate', BIN, 'x', '--seed', 'abc'], /'--seed <s>' argument 'abc' is invalid\. expected an integer in \[0, 2\^64 - 1\]$/],
    [['generate', BIN, 'x', '--seed', '-1'], /'--seed <s>' argument '-1' is invalid/],
    [['generate', BIN, 'x', '--seed', '18446744073709551616'], /'--seed <s>' argument '18446744073709551616' is invalid/],
    [['generate', BIN, 'x', '--context', '0'], /'--context <n>' argument '0' is invalid\. expected an integer >= 1$/],
    [['generate', BIN, 'x', '--threads', '0'], new RegExp(`'--threads <n>' argument '0' is invalid\\. expected an integer in \\[1, ${cores}\\]$`)],
    [['generate', BIN, 'x', '--threads', String(cores + 1)], /'--threads <n>' argument '\d+' is invalid/],
    [['chat', BIN, '--max-tokens', 'x'], /'--max-tokens <n>' argument 'x' is invalid/],
    [['bench', BIN, '--gen-tokens', '-1'], /'--gen-tokens <n>' argument '-1' is invalid\. expected an integer >= 1$/],
    [['bench', BIN, '--threads', '1000000'], /'--threads <n>' argument '1000000' is invalid/],
    [['embed', EMBD, 'x', '--batch-size', '0'], /'--batch-size <n>' argument '0' is invalid/],
    [['embed', EMBD, 'x', '--pooling', 'sum'], /'--pooling <mode>' argument 'sum' is invalid\. expected one of mean, cls, max$/],
    [['convert', BIN, path.join(os.tmpdir(), 'never.x'), '--to', 'onnx'], /'--to <format>' argument 'onnx' is invalid\. expected one of /],
    [['convert', BIN, path.join(os.tmpdir(), 'never.x'), '--to', 'gguf', '--group-size', '-2'], /'--group-size <n>' argument '-2' is invalid/],
    [['answer', BIN, BIN, 'q', '--prefix-attention', 'all'], /'--prefix-attention <n>' argument 'all' is invalid\. expected 'image' or an integer >= 0$/],
    [['generate', BIN], /missing required argument 'prompt'/],
    [['generate', BIN, 'x', '--no-such-option'], /unknown option '--no-such-option'/],
  ])('%j', async (args, pattern) => {
    expectOneLine(await runCli(args), 2, pattern);
  });
});

describe('paths', () => {
  test('a missing path, for every command that takes one: one line naming it, exit code 2', async () => {
    const missing = path.join(tmp.dir, 'missing.bin');
    for (const args of [
      ['inspect', missing],
      ['generate', missing, 'x'],
      ['chat', missing],
      ['bench', missing],
      ['embed', missing, 'x'],
      ['convert', missing, path.join(tmp.dir, 'out.gguf'), '--to', 'gguf'],
      ['generate', BIN, 'x', '--tokenizer', missing],
    ]) {
      expectOneLine(await runCli(args), 2, new RegExp(`is invalid.*no such file or folder$`));
    }
  });

  test('an empty file and an empty folder: BAD_MAGIC naming what was found, exit code 2', async () => {
    const empty = path.join(tmp.dir, 'empty.bin');
    fs.writeFileSync(empty, '');
    expectOneLine(await runCli(['inspect', empty]), 2, /^weightmap: BAD_MAGIC: .*found an empty file \(0 bytes\)\)/);
    const folder = path.join(tmp.dir, 'empty-folder');
    fs.mkdirSync(folder);
    expectOneLine(await runCli(['generate', folder, 'x']), 2, /^weightmap: BAD_MAGIC: .*found an empty folder\)/);
  });
});

test('bench on an embedding model names the command to use (exit code 2: bad input)', async () => {
  expectOneLine(await runCli(['bench', EMBD, '--prompt-tokens', '4', '--gen-tokens', '1']), 2, /BERT embedding model.*weightmap embed/);
});
