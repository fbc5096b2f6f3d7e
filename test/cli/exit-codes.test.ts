/**
 * One exit-code rule for every command (docs/cli.md, lib/cli/run-command.ts): 2 for bad
 * input or usage, 1 for a runtime failure, 130 / 143 for SIGINT / SIGTERM. The same kind of error
 * exits the same way whichever path raised it; error lines never print `undefined` or a
 * temporary's name.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { CommanderError, InvalidArgumentError } from 'commander';
import { exitCodeOf, EXIT_SIGNAL } from '../../lib/cli/run-command';
import { AbortError, ConstraintError, NoTokenizerError, OutputIsInputError, PipelineError, SidecarConflictError, UnsupportedError, WeightFormatError } from '../../lib/base/errors';
import { runCli } from '../helpers/cli';
import { fixture } from '../helpers/fixtures';
import { testWorkspace } from '../helpers/workspace';

const BIN = fixture('llama-stories260k', 'stories260K.bin');
const TLLM = fixture('tllm-tiny', 'model.tllm');
const EMBD = fixture('embd-minilm-tiny', 'model.weights');
const { fresh } = testWorkspace('weightmap-exit-codes-');

const errno = (code: string, extra: object = {}) => Object.assign(new Error(`${code}: simulated`), { code, ...extra });

describe('the table', () => {
  test.each([
    ['a WeightFormatError (UNSUPPORTED)', 2, new WeightFormatError('UNSUPPORTED', 'x')],
    ['a WeightFormatError (TRUNCATED)', 2, new WeightFormatError('TRUNCATED', 'x')],
    ['an UnsupportedError (ERR_WEIGHTMAP_UNSUPPORTED)', 2, new UnsupportedError('x')],
    ['an output that is an input', 2, new OutputIsInputError('a', 'a')],
    ['a sidecar of another model', 2, new SidecarConflictError('a', 'b', 'c')],
    ['no tokenizer', 2, new NoTokenizerError('m')],
    ['a bad option value', 2, new InvalidArgumentError('x')],
    ['a schema past a bound', 2, new ConstraintError('SCHEMA_TOO_LARGE', 'x', 'maxNodes')],
    ['a logit bias that bans every token', 2, new ConstraintError('NO_ALLOWED_TOKEN', 'x')],
    ['a token the constraint rejects (internal)', 1, new ConstraintError('TOKEN_REJECTED', 'x')],
    ['a commander usage error', 2, new CommanderError(1, 'commander.unknownOption', 'x')],
    ['a value out of range', 2, Object.assign(new RangeError('x'), { code: 'ERR_OUT_OF_RANGE' })],
    ['a stage off loopback without TLS', 2, errno('ERR_WEIGHTMAP_INSECURE_LISTEN')],
    ['stages that do not cover the model', 2, new PipelineError('ERR_WEIGHTMAP_PIPELINE_CONFIG', 'x')],
    ['a stage that does not answer', 1, new PipelineError('ERR_WEIGHTMAP_STAGE_UNAVAILABLE', 'x')],
    ['a missing path', 2, errno('ENOENT', { path: '/nope' })],
    ['a path under a file', 2, errno('ENOTDIR', { path: '/a/b' })],
    ['a name too long', 2, errno('ENAMETOOLONG', { path: '/a' })],
    ['a full disk', 1, errno('ENOSPC')],
    ['an I/O error', 1, errno('EIO')],
    ['a permission', 1, errno('EACCES', { path: '/a' })],
    ['an internal error', 1, new Error('internal: x')],
    ['an abort without a signal', 1, new AbortError()],
  ])('%s: %d', (_what, code, error) => {
    expect(exitCodeOf(error)).toBe(code);
  });

  test('signals', () => {
    expect(EXIT_SIGNAL).toEqual({ SIGINT: 128 + 2, SIGTERM: 128 + 15 });
  });
});

describe('the CLI', () => {
  test('UNSUPPORTED under both spellings exits 2', async () => {
    // A WeightFormatError UNSUPPORTED: an EMBD file with the compressed flag (bit 3 of the flags at byte 8).
    const compressed = fresh('compressed.weights');
    const bytes = fs.readFileSync(EMBD);
    bytes.writeUInt32LE(bytes.readUInt32LE(8) | 8, 8);
    fs.writeFileSync(compressed, bytes);
    const format = await runCli(['embed', compressed, 'x']);
    expect(format.stderr).toMatch(/^weightmap: UNSUPPORTED: compressed EMBD files are not supported/);
    // An UnsupportedError: a quantization the output format does not store.
    const request = await runCli(['convert', TLLM, fresh('x.tllm'), '--to', 'tllm', '--quant', 'q8_0']);
    expect(request.stderr).toMatch(/^weightmap: ERR_WEIGHTMAP_UNSUPPORTED: TLLM \(tiny_llama\) stores no q8_0 weights/);
    expect([format.exitCode, request.exitCode]).toEqual([2, 2]);
  });

  test('a write error names the destination, never the temporary', async () => {
    const dir = fresh('long');
    fs.mkdirSync(dir);
    const out = path.join(dir, `${'x'.repeat(300)}.gguf`); // longer than a file name may be
    const r = await runCli(['convert', BIN, out, '--to', 'gguf', '--no-progress']);
    expect(r.exitCode).toBe(2);
    expect(r.stderr.trimEnd().split('\n')).toEqual([`weightmap: ENAMETOOLONG: name too long, rename '${out}'`]);
    expect(fs.readdirSync(dir)).toEqual([]);
  });

  test('a long destination name that fits still gets a temporary that fits', async () => {
    const dir = fresh('fits');
    fs.mkdirSync(dir);
    const out = path.join(dir, `${'é'.repeat(120)}.gguf`); // 245 bytes of UTF-8
    const r = await runCli(['convert', BIN, out, '--to', 'gguf', '--no-progress']);
    expect(r).toMatchObject({ exitCode: 0, stderr: '' });
    expect(fs.readdirSync(dir)).toEqual([path.basename(out)]);
  });
});

describe('messages never print undefined', () => {
  test('WeightFormatError with only expected, only found, or neither', () => {
    expect(new WeightFormatError('BAD_HEADER', 'm', { expected: 4 }).message).toBe('BAD_HEADER: m (expected 4)');
    expect(new WeightFormatError('BAD_HEADER', 'm', { found: 'x', path: 'f' }).message).toBe('BAD_HEADER: m (found x) [f]');
    expect(new WeightFormatError('BAD_HEADER', 'm', { expected: [1, 2], found: 3 }).message).toBe('BAD_HEADER: m (expected [1,2], found 3)');
    expect(new WeightFormatError('BAD_HEADER', 'm', { offset: 8 }).message).toBe('BAD_HEADER: m [byte 8]');
  });
});
