/**
 * The chat-template worker thread: renders templates within their budget (bounded-render.ts), one
 * at a time, keeping the few it parsed last. render-client.ts ends it when a render overruns.
 */
import { parentPort } from 'node:worker_threads';
import { ChatTemplateError } from './budget';
import { parseTemplate, renderBounded } from './bounded-render';
import type { RenderReply, RenderRequest } from './protocol';

const parsed = new Map<string, ReturnType<typeof parseTemplate>>();
const PARSED_LIMIT = 4;

function templateOf(request: RenderRequest) {
  let template = parsed.get(request.source);
  if (template) {
    parsed.delete(request.source);
  } else {
    template = parseTemplate(request.source, request.budget);
    if (parsed.size >= PARSED_LIMIT) parsed.delete(parsed.keys().next().value!);
  }
  parsed.set(request.source, template);
  return template;
}

function handle(request: RenderRequest): RenderReply {
  try {
    return { id: request.id, text: renderBounded(templateOf(request), request.context, request.budget) };
  } catch (error) {
    const e = error instanceof ChatTemplateError ? error : new ChatTemplateError('render', (error as Error)?.message ?? String(error));
    return { id: request.id, error: { reason: e.reason, message: e.message } };
  }
}

parentPort!.on('message', (request: RenderRequest) => parentPort!.postMessage(handle(request)));
// Loaded: the client counts a render's time from here on.
parentPort!.postMessage('ready');
