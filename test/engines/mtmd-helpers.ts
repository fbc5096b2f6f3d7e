/**
 * Running llama.cpp's mtmd for the vision tests: llama-mtmd-cli's greedy reply, the libmtmd logits
 * driver (scripts/interop/mtmd-logits.cpp) compiled against the peer cache's build, and the
 * comparisons the tests make.
 */
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import type { Tokenizer } from '../../lib/tokenizers';
import { LLAMA_CPP } from './gptoss-models';

const BIN = path.join(LLAMA_CPP, 'build', 'bin');
const MARKER = '<<weightmap-response>>';

/** The bytes llama.cpp prints for `ids`' pieces: <0xNN> a byte, '▁' a space, else the token's text. */
export function replyBytes(tokenizer: Tokenizer, ids: readonly number[]): Buffer {
  return Buffer.concat(
    ids.map((id) => {
      const token = tokenizer.idToToken(id)!;
      const byte = /^<0x([0-9A-F]{2})>$/.exec(token);
      return byte ? Buffer.from([parseInt(byte[1], 16)]) : Buffer.from(token.replace(/\u2581/g, ' '), 'utf8');
    }),
  );
}

/** llama-mtmd-cli's reply bytes for `args` (`env` added to the environment). */
export function mtmdCliReply(cli: string, args: string[], env: Record<string, string> = {}): Buffer {
  // llama.cpp prints through common_log's worker thread, which may not have written the reply's
  // last pieces when the process exits (common/log.h): a reply cut short is run again.
  for (let attempt = 0; attempt < 8; attempt++) {
    const run = spawnSync(cli, args, { env: { ...process.env, ...env, MTMD_TEST_RESPONSE_MARKER: MARKER }, timeout: 600_000 });
    if (run.status !== 0) throw new Error(`llama-mtmd-cli failed (status ${run.status}, signal ${run.signal}): ${String(run.stderr).slice(-2000)}`);
    const out = run.stdout as Buffer;
    const at = out.indexOf(`${MARKER}\n`);
    // eval_message's newline after the prompt, the reply's pieces, the two newlines main ends with.
    const whole = at < 0 ? undefined : out.subarray(at + MARKER.length + 1);
    if (!whole || whole.length < 3) continue;
    if (whole[0] !== 0x0a) throw new Error(`llama-mtmd-cli: no newline after the prompt: ${out.toString().slice(-2000)}`);
    if (whole.subarray(whole.length - 2).toString() === '\n\n') return whole.subarray(1, whole.length - 2);
  }
  throw new Error("llama-mtmd-cli's reply was cut short eight times");
}

/** scripts/interop/mtmd-logits.cpp compiled into `dir`; its path. */
export function mtmdLogitsDriver(dir: string): string {
  const driver = path.join(dir, 'mtmd-logits');
  const source = path.join(__dirname, '..', '..', 'scripts', 'interop', 'mtmd-logits.cpp');
  const include = ['include', 'ggml/include', 'tools/mtmd'].flatMap((d) => ['-I', path.join(LLAMA_CPP, d)]);
  const cc = spawnSync('c++', ['-O1', '-std=c++17', '-o', driver, source, ...include, '-L', BIN, '-lmtmd', '-lllama', '-lggml', '-lggml-base', `-Wl,-rpath,${BIN}`], { encoding: 'utf8' });
  if (cc.status !== 0) throw new Error(`compiling mtmd-logits failed: ${cc.stderr}`);
  return driver;
}

/** max |got − want| over max |want| (over want's length). */
export function relativeMaxError(got: ArrayLike<number>, want: ArrayLike<number>): number {
  let err = 0;
  let scale = 0;
  for (let i = 0; i < want.length; i++) {
    err = Math.max(err, Math.abs(got[i] - want[i]));
    scale = Math.max(scale, Math.abs(want[i]));
  }
  return err / scale;
}
