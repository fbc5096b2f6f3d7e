/**
 * llama-server's POST /tokenize ({ content, add_special, with_pieces } → { tokens }) and POST
 * /detokenize ({ tokens } → { content }) with the served text model's tokenizer (long texts encoded
 * in the tokenizer worker; at most MAX_DETOKENIZE_IDS ids decoded per request).
 */
import { invalidRequest } from '../api-error';
import { sendJson, textModel, type RouteContext } from '../context';
import { validateDetokenize, validateTokenize } from '../validation';

/** The text model `requested` names; without a name, the first one (llama-server serves one). */
async function served(ctx: RouteContext, requested: string | undefined) {
  return (await textModel(ctx, requested ?? ctx.served.pool.list('text')[0]?.id ?? '')).model;
}

export async function tokenize(ctx: RouteContext): Promise<void> {
  const body = validateTokenize(await ctx.body(), ctx.served.strict);
  const model = await served(ctx, body.model);
  const ids = await model.encodeAsync(body.content, { addSpecialTokens: body.add_special === true });
  const tokens = body.with_pieces ? ids.map((id) => ({ id, piece: model.tokenizer.decode([id]) })) : ids;
  sendJson(ctx.res, 200, { tokens });
}

export async function detokenize(ctx: RouteContext): Promise<void> {
  const body = validateDetokenize(await ctx.body(), ctx.served.strict);
  const model = await served(ctx, body.model);
  body.tokens.forEach((id, i) => {
    if (id >= model.vocabSize) throw invalidRequest(`tokens[${i}]: ${id} is not a token id of this vocabulary (size ${model.vocabSize})`, `tokens[${i}]`);
  });
  sendJson(ctx.res, 200, { content: model.tokenizer.decode(body.tokens) });
}
