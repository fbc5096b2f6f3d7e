/**
 * The decoders of tokenizer.json for BPE models over U+2581-marked text (Gemma, Llama 2 style):
 * a Sequence of Replace (string pattern), ByteFallback and Fuse, with Hugging Face's semantics:
 * Replace rewrites each token's text; ByteFallback turns each run of `<0xNN>` tokens into the
 * text of its bytes, or, when the run is not valid UTF-8, into one U+FFFD per byte; Fuse joins.
 */
import { UnsupportedError } from '../errors';

/** Token strings -> text. */
export type PieceDecoder = (tokens: readonly string[]) => string;

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
    case 'Fuse':
      return (tokens) => [tokens.join('')];
    default:
      throw new UnsupportedError(`decoder type ${JSON.stringify(json?.type)} is not supported with this BPE model`);
  }
}

/** Builds the decoder of a tokenizer.json `decoder` entry (a Sequence, a single step, or null: the tokens joined). */
export function pieceDecoderFromJson(json: any): PieceDecoder {
  if (json === null || json === undefined) return (tokens) => tokens.join('');
  const steps = (json?.type === 'Sequence' ? (json.decoders as any[]) : [json]).map(stepFromJson);
  return (tokens) => {
    let t = tokens as string[];
    for (const s of steps) t = s(t);
    return t.join('');
  };
}
