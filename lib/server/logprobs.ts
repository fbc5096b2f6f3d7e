/** Token logprobs in OpenAI's two shapes: chat's `logprobs.content` and the legacy completions' parallel arrays. */
import type { Tokenizer } from '../tokenizers';
import type { PieceLogprob } from './routes/generation-response';

const text = (tokenizer: Tokenizer, id: number) => tokenizer.decode([id]);
const bytes = (s: string) => Array.from(Buffer.from(s, 'utf8'));

export function chatLogprobs(tokenizer: Tokenizer, pieces: readonly PieceLogprob[]): { content: unknown[] } {
  return {
    content: pieces.map((p) => {
      const t = text(tokenizer, p.token);
      return {
        token: t,
        logprob: p.logprob,
        bytes: bytes(t),
        top_logprobs: p.top.map((alt) => {
          const a = text(tokenizer, alt.token);
          return { token: a, logprob: alt.logprob, bytes: bytes(a) };
        }),
      };
    }),
  };
}

export function completionLogprobs(tokenizer: Tokenizer, pieces: readonly PieceLogprob[], offset = 0): Record<string, unknown> {
  const tokens = pieces.map((p) => text(tokenizer, p.token));
  const textOffset: number[] = [];
  let at = offset;
  for (const t of tokens) {
    textOffset.push(at);
    at += t.length;
  }
  return {
    tokens,
    token_logprobs: pieces.map((p) => p.logprob),
    top_logprobs: pieces.map((p) => Object.fromEntries(p.top.map((alt) => [text(tokenizer, alt.token), alt.logprob]))),
    text_offset: textOffset,
  };
}
