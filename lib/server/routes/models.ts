/** GET /v1/models and GET /v1/models/{id}. */
import { ApiError } from '../api-error';
import { sendJson, type RouteContext, type Served } from '../context';

function entries(served: Served) {
  // Every model, loaded or loaded on demand (llama-server's router lists them the same way).
  return served.pool.list().map(({ id }) => ({ id, object: 'model', created: served.created, owned_by: 'weightmap' }));
}

export async function listModels(ctx: RouteContext): Promise<void> {
  sendJson(ctx.res, 200, { object: 'list', data: entries(ctx.served) });
}

export async function retrieveModel(ctx: RouteContext, id: string): Promise<void> {
  const entry = entries(ctx.served).find((e) => e.id === id);
  if (!entry) throw new ApiError(404, `the model '${id}' does not exist here`, 'invalid_request_error', 'model', 'model_not_found');
  sendJson(ctx.res, 200, entry);
}
