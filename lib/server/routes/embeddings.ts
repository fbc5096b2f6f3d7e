/** POST /v1/embeddings: vectors as float arrays or base64 (little-endian float32, what the openai client asks for by default). */
import { embeddingModel, sendJson, type RouteContext } from '../context';
import { validateEmbedding } from '../validation';

export async function embeddings(ctx: RouteContext): Promise<void> {
  const body = validateEmbedding(await ctx.body(), ctx.served.strict);
  const { id, embedder, queue, metrics } = await embeddingModel(ctx, body.model);
  const texts = typeof body.input === 'string' ? [body.input] : body.input;
  const ids = texts.map((text) => embedder.tokenizer.encode(text, { maxLength: embedder.maxSeqLength }));
  const release = await queue.enter(ctx.signal);
  let vectors: Float32Array[];
  try {
    vectors = await embedder.embedTokens(ids, { signal: ctx.signal });
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
