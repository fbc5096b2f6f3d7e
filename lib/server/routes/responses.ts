/**
 * POST /v1/responses: OpenAI's Responses API on the chat path (prepareChat: the model's template,
 * tools under the JSON-schema mask, text.format as response_format). The reply is a list of output
 * items: the thinking (a reasoning item, when the template thinks), the text (a message item),
 * each tool call (a function_call item). Streamed as the Responses events: response.created,
 * output_item.added, output_text.delta, function_call_arguments.delta, ..., response.completed
 * (response.incomplete at the token limit).
 */
import { randomUUID } from 'node:crypto';
import type { ToolCall } from '../../tools/types';
import { ApiError, toApiError } from '../api-error';
import { sendJson, type RouteContext } from '../context';
import { chatBodyOf, renamedError } from '../responses-chat';
import type { ResponsesBody } from '../responses-schema';
import { SseStream } from '../sse';
import { validateResponses } from '../validation';
import { prepareChat, type PreparedChat } from './chat-completions';
import { finishReason, logUsage } from './generation-response';

type Item = Record<string, unknown>;

const newId = (prefix: string) => `${prefix}_${randomUUID().replace(/-/g, '')}`;

const reasoningItem = (id: string, text: string, status = 'completed'): Item => ({ type: 'reasoning', id, status, summary: [], content: [{ type: 'reasoning_text', text }] });
const outputText = (text: string) => ({ type: 'output_text', text, annotations: [], logprobs: [] });
const messageItem = (id: string, text: string, status = 'completed'): Item => ({ type: 'message', id, status, role: 'assistant', content: [outputText(text)] });
const callItem = (call: ToolCall, id: string, args = call.arguments, status = 'completed'): Item => ({ type: 'function_call', id, status, call_id: call.id, name: call.name, arguments: args });

/** Errors of the chat path name the Responses request's fields (`sources`: the input item of each chat message). */
function asResponsesError(error: unknown, sources: readonly string[] = []): ApiError {
  return renamedError(toApiError(error), sources);
}

/** The response object around `output` (the request's settings echoed, as OpenAI does). */
function responseObject(body: ResponsesBody, id: string, createdAt: number, model: string) {
  return (status: string, output: Item[], end?: { finish: 'stop' | 'length'; promptTokens: number; outputTokens: number }) => ({
    id,
    object: 'response',
    created_at: createdAt,
    status,
    error: null,
    incomplete_details: end?.finish === 'length' ? { reason: 'max_output_tokens' } : null,
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    model,
    output,
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: null,
    reasoning: { effort: body.reasoning?.effort ?? null, summary: null },
    store: false,
    temperature: body.temperature ?? 1,
    text: { format: body.text?.format ?? { type: 'text' } },
    tool_choice: body.tool_choice ?? 'auto',
    tools: (body.tools ?? []).map((t) => ({ type: 'function', name: t.name, description: t.description ?? null, parameters: t.parameters ?? null, strict: t.strict ?? null })),
    top_p: body.top_p ?? 1,
    truncation: 'disabled',
    metadata: {},
    usage: end
      ? {
          input_tokens: end.promptTokens,
          input_tokens_details: { cached_tokens: 0 },
          output_tokens: end.outputTokens,
          output_tokens_details: { reasoning_tokens: 0 },
          total_tokens: end.promptTokens + end.outputTokens,
        }
      : null,
  });
}

export async function responses(ctx: RouteContext): Promise<void> {
  const body = validateResponses(await ctx.body(), ctx.served.strict);
  let prepared: PreparedChat;
  let sources: string[] = [];
  try {
    const converted = chatBodyOf(body);
    sources = converted.sources;
    prepared = await prepareChat(ctx, converted.chat);
  } catch (error) {
    throw asResponsesError(error, sources);
  }
  const { id: modelId, promptTokens, reply: reader } = prepared;
  const run = prepared.start(0);
  const response = responseObject(body, newId('resp'), Math.floor(Date.now() / 1000), modelId);
  const ending = (finish: 'stop' | 'length') => ({ status: finish === 'length' ? 'incomplete' : 'completed', end: { finish, promptTokens, outputTokens: run.tokens.length } });

  if (!body.stream) {
    let text = '';
    try {
      for await (const piece of run) text += piece.text;
    } catch (error) {
      throw asResponsesError(error);
    }
    const finish = finishReason(run.stopReason);
    const reply = reader.whole(text, finish !== 'length');
    const output: Item[] = [
      ...(reply.reasoning ? [reasoningItem(newId('rs'), reply.reasoning)] : []),
      ...(reply.content || reply.calls.length === 0 ? [messageItem(newId('msg'), reply.content)] : []),
      ...reply.calls.map((c) => callItem(c, newId('fc'))),
    ];
    logUsage(ctx, promptTokens, [run]);
    const { status, end } = ending(finish);
    return sendJson(ctx.res, 200, response(status, output, end));
  }

  const iterator = run[Symbol.asyncIterator]();
  // The first piece comes before the headers: a generation that fails to start still gets a plain error response.
  let next: IteratorResult<{ text: string }>;
  try {
    next = await iterator.next();
  } catch (error) {
    throw asResponsesError(error);
  }
  const sse = new SseStream(ctx.res);
  let sequence = 0;
  const emit = (type: string, fields: Record<string, unknown>) => sse.send({ type, sequence_number: sequence++, ...fields }, type);
  const output: Item[] = [];
  await emit('response.created', { response: response('in_progress', []) });
  await emit('response.in_progress', { response: response('in_progress', []) });

  /** The item being written (reasoning or message): its text streams as deltas of its one content part. */
  let open: { kind: 'reasoning' | 'message'; id: string; index: number; text: string } | undefined;
  const close = async () => {
    if (!open) return;
    const { kind, id, index, text } = open;
    open = undefined;
    const item = kind === 'reasoning' ? reasoningItem(id, text) : messageItem(id, text);
    const part = kind === 'reasoning' ? { type: 'reasoning_text', text } : outputText(text);
    await emit(kind === 'reasoning' ? 'response.reasoning_text.done' : 'response.output_text.done', { item_id: id, output_index: index, content_index: 0, text, ...(kind === 'message' ? { logprobs: [] } : {}) });
    await emit('response.content_part.done', { item_id: id, output_index: index, content_index: 0, part });
    output[index] = item;
    await emit('response.output_item.done', { output_index: index, item });
  };
  /** `always`: the item is opened even for no text (a reply with nothing in it is one empty message). */
  const write = async (kind: 'reasoning' | 'message', delta: string, always = false) => {
    if (!delta && !always) return;
    if (open?.kind !== kind) {
      await close();
      open = { kind, id: newId(kind === 'reasoning' ? 'rs' : 'msg'), index: output.length, text: '' };
      const item = kind === 'reasoning' ? reasoningItem(open.id, '', 'in_progress') : messageItem(open.id, '', 'in_progress');
      output.push(item);
      await emit('response.output_item.added', { output_index: open.index, item: { ...item, content: [] } });
      await emit('response.content_part.added', { item_id: open.id, output_index: open.index, content_index: 0, part: kind === 'reasoning' ? { type: 'reasoning_text', text: '' } : outputText('') });
    }
    if (!delta) return;
    open.text += delta;
    await emit(kind === 'reasoning' ? 'response.reasoning_text.delta' : 'response.output_text.delta', {
      item_id: open.id,
      output_index: open.index,
      content_index: 0,
      delta,
      ...(kind === 'message' ? { logprobs: [] } : {}),
    });
  };
  const read = reader.stream();
  const push = async ({ reasoning, content }: { reasoning: string; content: string }) => {
    await write('reasoning', reasoning);
    await write('message', content);
  };
  for (; !next.done; next = await iterator.next()) await push(read.push(next.value.text));
  const finish = finishReason(run.stopReason);
  const made = read.finish(finish !== 'length');
  await push(made);
  if (output.length === 0 && made.calls.length === 0) await write('message', '', true);
  await close();
  for (const call of made.calls) {
    const itemId = newId('fc');
    const index = output.length;
    output.push(callItem(call, itemId));
    await emit('response.output_item.added', { output_index: index, item: callItem(call, itemId, '', 'in_progress') });
    await emit('response.function_call_arguments.delta', { item_id: itemId, output_index: index, delta: call.arguments });
    await emit('response.function_call_arguments.done', { item_id: itemId, output_index: index, name: call.name, arguments: call.arguments });
    await emit('response.output_item.done', { output_index: index, item: output[index] });
  }
  logUsage(ctx, promptTokens, [run]);
  const { status, end } = ending(finish);
  await emit(status === 'completed' ? 'response.completed' : 'response.incomplete', { response: response(status, output, end) });
  sse.end(false);
}
