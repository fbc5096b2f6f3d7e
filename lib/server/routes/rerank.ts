/**
 * POST /v1/rerank and /rerank (llama-server's routes; Jina's and Cohere's shape): the documents
 * ordered by the reranker's score of each (query, document) pair, best first, cut to top_n.
 * `relevance_score` is the reranker's score: a cross-encoder's raw classifier logit, as
 * llama-server reports it, unless the model was loaded with the sigmoid activation; a yes/no
 * reranker's (Qwen3-Reranker) P(yes), as llama-server reports it for that model.
 */
import { rerankModel, sendJson, type RouteContext } from '../context';
import { validateRerank } from '../validation';

export async function rerank(ctx: RouteContext): Promise<void> {
  const body = validateRerank(await ctx.body(), ctx.served.strict);
  const { id, reranker, queue, metrics } = await rerankModel(ctx, body.model);
  ctx.log.model = id;
  const texts = body.documents.map((d) => (typeof d === 'string' ? d : d.text));
  const release = await queue.enter(ctx.signal);
  let scored: Awaited<ReturnType<typeof reranker.score>>;
  try {
    scored = await reranker.score(body.query, texts, { signal: ctx.signal });
  } finally {
    release();
  }
  const { scores, tokens } = scored;
  const order = scores.map((_, i) => i).sort((a, b) => scores[b] - scores[a] || a - b);
  metrics?.embedded(tokens);
  ctx.log.promptTokens = tokens;
  sendJson(ctx.res, 200, {
    model: id,
    object: 'list',
    results: order.slice(0, body.top_n ?? order.length).map((index) => ({
      index,
      relevance_score: scores[index],
      ...(body.return_documents ? { document: { text: texts[index] } } : {}),
    })),
    usage: { prompt_tokens: tokens, total_tokens: tokens },
  });
}
