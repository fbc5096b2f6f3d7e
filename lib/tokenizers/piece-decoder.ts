/**
 * The decoders of tokenizer.json for models over U+2581-marked text (Gemma, Llama 2 style BPE,
 * Unigram): a Sequence of Replace (string pattern), ByteFallback, Fuse, Strip and Metaspace
 * (metaspace.ts), with Hugging Face's
 * semantics: Replace rewrites each token's text; ByteFallback turns each run of `<0xNN>` tokens
 * into the text of its bytes, or, when the run is not valid UTF-8, into one U+FFFD per byte; Fuse
 * joins; Strip cuts up to `start` / `stop` copies of one character off each token's ends (after
 * Fuse: off the text's, Llama 2's dropping of the dummy prefix space).
 */
import { UnsupportedError } from '../base/errors';
import { metaspaceDecodeToken, metaspaceFromJson } from './metaspace';

/** Token strings -> text. */
export type PieceDecoder = (tokens: readonly string[]) => string;

/**
 * The decoder as a stream takes it, one token at a time: `piece` decodes one token without a
 * Strip that follows Fuse, which instead cuts up to `stripStart` copies of `stripChar` off the
 * start of the whole output (a Strip `stop` after Fuse is refused: a stream cannot take back).
 */
export interface StreamPieceDecoder {
  piece: PieceDecoder;
  stripChar: string;
  stripStart: number;
}

const BYTE_TOKEN = /^<0x([0-9A-Fa-f]{2})>$/;
const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

function byteFallback(tokens: readonly string[]): string[] {
  const out: string[] = [];
  const run: number[] = [];
  const flush = () => {
    if (run.length === 0) return;
    try {
      out.push(strictUtf8.decode(Uint8Array.from(run)));
    } catch {
      out.push('\ufffd'.repeat(run.length));
    }
    run.length = 0;
  };
  for (const t of tokens) {
    const m = t.length === 6 ? BYTE_TOKEN.exec(t) : null;
    if (m) run.push(parseInt(m[1], 16));
    else {
      flush();
      out.push(t);
    }
  }
  flush();
  return out;
}

type Step = (tokens: string[]) => string[];

function stepFromJson(json: any): Step {
  switch (json?.type) {
    case 'Replace': {
      if (typeof json.pattern?.String !== 'string') throw new UnsupportedError('Replace decoder with a Regex pattern is not supported');
      const from = json.pattern.String as string;
      const to = String(json.content);
      return (tokens) => tokens.map((t) => t.replaceAll(from, to));
    }
    case 'ByteFallback':
      return byteFallback;
    case 'Metaspace': {
      const spec = metaspaceFromJson(json);
      return (tokens) => tokens.map((t, i) => metaspaceDecodeToken(spec, t, i));
    }
    case 'Fuse':
      return (tokens) => [tokens.join('')];
    case 'Strip': {
      const { content, start, stop } = stripOf(json);
      return (tokens) => tokens.map((t) => stripToken(t, content, start, stop));
    }
    default:
      throw new UnsupportedError(`decoder type ${JSON.stringify(json?.type)} is not supported with this BPE model`);
  }
}

function stripOf(json: any): { content: string; start: number; stop: number } {
  const { content, start, stop } = json ?? {};
  if (typeof content !== 'string' || [...content].length !== 1 || !Number.isInteger(start) || !Number.isInteger(stop) || start < 0 || stop < 0) {
    throw new UnsupportedError(`Strip decoder ${JSON.stringify(json)} is not one character with counts`);
  }
  return { content, start, stop };
}

/** Up to `start` leading and `stop` trailing copies of `c` (one code point) cut off `t`. */
function stripToken(t: string, c: string, start: number, stop: number): string {
  let a = 0;
  let b = t.length;
  for (let k = 0; k < start && t.startsWith(c, a); k++) a += c.length;
  for (let k = 0; k < stop && b - c.length >= a && t.startsWith(c, b - c.length); k++) b -= c.length;
  return t.slice(a, b);
}

function stepsOf(json: any): any[] {
  if (json === null || json === undefined) return [];
  return json?.type === 'Sequence' ? (json.decoders as any[]) : [json];
}

function chain(steps: Step[]): PieceDecoder {
  return (tokens) => {
    let t = tokens as string[];
    for (const s of steps) t = s(t);
    return t.join('');
  };
}

/** Builds the decoder of a tokenizer.json `decoder` entry (a Sequence, a single step, or null: the tokens joined). */
export function pieceDecoderFromJson(json: any): PieceDecoder {
  return chain(stepsOf(json).map(stepFromJson));
}

/** The same decoder for one token at a time (see StreamPieceDecoder). */
export function streamPieceDecoderFromJson(json: any): StreamPieceDecoder {
  const steps = stepsOf(json);
  if (steps.some((s) => s?.type === 'Metaspace')) throw new UnsupportedError('a Metaspace decoder in a Sequence cannot decode a stream');
  let stripChar = '';
  let stripStart = 0;
  const fused = steps.findIndex((s) => s?.type === 'Fuse');
  const kept = steps.filter((s, i) => {
    if (fused < 0 || i < fused || s?.type !== 'Strip') return true;
    const { content, start, stop } = stripOf(s);
    if (stop > 0 || (stripStart > 0 && content !== stripChar)) throw new UnsupportedError(`Strip decoder ${JSON.stringify(s)} cannot decode a stream`);
    stripChar = content;
    stripStart += start;
    return false;
  });
  return { piece: chain(kept.map(stepFromJson)), stripChar, stripStart };
}

/**
 * The Strip after a Fuse of a stream decoder (StreamPieceDecoder's stripChar, stripStart): cuts up to
 * `count` leading `char`s off the stream's first bytes, one piece after another, and stops at the
 * first piece that does not start with it.
 */
export function leadingStripper(char: string, count: number): (bytes: Uint8Array) => Uint8Array {
  const strip = Buffer.from(char, 'utf8');
  let left = count;
  return (bytes) => {
    while (left > 0 && bytes.length > 0) {
      if (!Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).subarray(0, strip.length).equals(strip)) left = 0;
      else {
        bytes = bytes.subarray(strip.length);
        left--;
      }
    }
    return bytes;
  };
}
