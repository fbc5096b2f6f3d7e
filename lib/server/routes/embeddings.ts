/**
 * POST /v1/embeddings: texts (truncated to the model's length) or token ids (used as given);
 * vectors as float arrays or base64 (little-endian float32, what the openai client asks for by
 * default), cut to `dimensions` when asked.
 */
import { embeddingModel, sendJson, type RouteContext } from '../context';
import { embeddingDimensions, embeddingTokenIds } from '../embedding-input';
import { validateEmbedding } from '../validation';

export async function embeddings(ctx: RouteContext): Promise<void> {
  const body = validateEmbedding(await ctx.body(), ctx.served.strict);
  const { id, embedder, queue, metrics } = await embeddingModel(ctx, body.model);
  const dimensions = embeddingDimensions(embedder, body.dimensions);
  const { input } = body;
  const ids =
    typeof input === 'string' || typeof input[0] === 'string'
      ? (typeof input === 'string' ? [input] : (input as string[])).map((text) => embedder.tokenizer.encode(text, { maxLength: embedder.maxSeqLength }))
      : embeddingTokenIds(embedder, input as number[] | number[][]);
  const release = await queue.enter(ctx.signal);
  let vectors: Float32Array[];
  try {
    vectors = await embedder.embedTokens(ids, { dimensions, signal: ctx.signal });
  } finally {
    release();
  }
  const base64 = body.encoding_format === 'base64';
  const tokens = ids.reduce((sum, seq) => sum + seq.length, 0);
  metrics?.embedded(tokens);
  ctx.log.promptTokens = tokens;
  sendJson(ctx.res, 200, {
    object: 'list',
    data: vectors.map((v, index) => ({
      object: 'embedding',
      index,
      embedding: base64 ? Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64') : Array.from(v),
    })),
    model: id,
    usage: { prompt_tokens: tokens, total_tokens: tokens },
  });
}
