/**
 * The Ollama API (/api/*) over the same models and schedulers as /v1: chat and generate (NDJSON
 * streams by default, as Ollama does; whole with stream: false), embed, and the model listings.
 * Token counts and durations as Ollama reports them (prompt_eval_count, eval_count, nanoseconds).
 */
import * as fs from 'node:fs';
import * as nodePath from 'node:path';
import type { ChatMessage } from '../../generation/chat';
import { splitThinking } from '../../generation/chat';
import { HarmonyStreamer, isHarmonyTemplate, parseHarmonyReply } from '../../generation/harmony';
import { packageRoot } from '../../addon/native';
import { lazy } from '../../base/lazy';
import type { ChatOptions, ChatPrompt } from '../../models/model';
import { ApiError, invalidRequest, toApiError } from '../api-error';
import { embeddingDimensions } from '../embedding-input';
import { sendJson, type RouteContext, type Route } from '../context';
import type { ScheduledGeneration } from '../scheduler';
import { ThinkingSplitter } from '../thinking-stream';
import { NdjsonStream } from './ndjson';
import { ollamaEmbedder, ollamaTextModel, running, show, tags } from './models';
import { formatSchema, NUM_PREDICT_FIELD, ollamaOptions } from './params';
import { shiftedPrompt } from '../openai-params';
import { validateOllamaChat, validateOllamaEmbed, validateOllamaGenerate, validateOllamaShow } from './validation';

const version = lazy(() => (JSON.parse(fs.readFileSync(nodePath.join(packageRoot, 'package.json'), 'utf8')) as { version: string }).version);

const ns = (ms: number) => Math.round(ms * 1e6);

/** The body of an Ollama error: { error: message }. */
export function ollamaErrorBody(error: ApiError): { error: string } {
  return { error: error.message };
}

interface Answer {
  model: string;
  /** The response's text field: Ollama's chat puts it in message.content, generate in response. */
  shape: (text: string, thinking: string) => Record<string, unknown>;
  thinking: boolean;
  /** The reply is Harmony's (gpt-oss's chat): read by its channels, analysis as the thinking. */
  harmony?: boolean;
  promptTokens: number;
}

/** Runs `run` and answers whole or as an NDJSON stream, the last object with done: true, the reason and the counts. */
async function answer(ctx: RouteContext, run: ScheduledGeneration, stream: boolean, a: Answer): Promise<void> {
  const started = performance.now();
  let firstAt: number | undefined;
  const created = () => new Date().toISOString();
  const iterator = run[Symbol.asyncIterator]();
  // The first piece before the headers: a generation that fails to start gets a plain error.
  let next = await iterator.next();
  firstAt = performance.now();
  const last = () => {
    const end = performance.now();
    ctx.log.promptTokens = a.promptTokens;
    ctx.log.completionTokens = run.tokens.length;
    return {
      done: true,
      done_reason: run.stopReason === 'max-tokens' || run.stopReason === 'context-full' ? 'length' : 'stop',
      total_duration: ns(end - started),
      load_duration: 0,
      prompt_eval_count: a.promptTokens,
      prompt_eval_duration: ns(firstAt! - started),
      eval_count: run.tokens.length,
      eval_duration: ns(end - firstAt!),
    };
  };
  if (!stream) {
    let text = '';
    for (; !next.done; next = await iterator.next()) text += next.value.text;
    const ended = run.stopReason !== 'max-tokens' && run.stopReason !== 'context-full';
    const { reasoning, content } = a.harmony ? parseHarmonyReply(text, ended, () => '') : a.thinking ? splitThinking(text) : { reasoning: '', content: text };
    sendJson(ctx.res, 200, { model: a.model, created_at: created(), ...a.shape(content, reasoning), ...last() });
    return;
  }
  const out = new NdjsonStream(ctx.res);
  const channels = a.harmony ? new HarmonyStreamer(() => '') : undefined;
  const splitter = a.thinking && !channels ? new ThinkingSplitter() : undefined;
  const send = async ({ reasoning, content }: { reasoning: string; content: string }) => {
    if (reasoning || content) await out.send({ model: a.model, created_at: created(), ...a.shape(content, reasoning), done: false });
  };
  for (; !next.done; next = await iterator.next()) await send(channels ? channels.push(next.value.text) : splitter ? splitter.push(next.value.text) : { reasoning: '', content: next.value.text });
  if (splitter) await send(splitter.flush());
  if (channels) await send(channels.finish(run.stopReason !== 'max-tokens' && run.stopReason !== 'context-full'));
  out.end({ model: a.model, created_at: created(), ...a.shape('', ''), ...last() });
}

const chatShape = (content: string, thinking: string) => ({ message: { role: 'assistant', content, ...(thinking ? { thinking } : {}) } });

/** POST /api/chat */
export const ollamaChat: Route = async (ctx) => {
  const body = validateOllamaChat(await ctx.body());
  const { id, model, scheduler } = await ollamaTextModel(ctx, body.model, body.keep_alive);
  const messages: ChatMessage[] = (body.messages ?? []).map((m) => ({ role: m.role, content: m.content, ...(m.thinking !== undefined ? { reasoningContent: m.thinking } : {}) }));
  if (messages.length === 0) {
    // Ollama's way to load a model (or, with keep_alive 0, unload it): acquiring it above loaded it, and its keep_alive holds from now.
    sendJson(ctx.res, 200, { model: body.model, created_at: new Date().toISOString(), message: { role: 'assistant', content: '' }, done: true, done_reason: body.keep_alive === 0 ? 'unload' : 'load' });
    return;
  }
  const thinking = body.think === true;
  let rendered: ChatPrompt;
  try {
    rendered = await model.chatPrompt(messages, { enableThinking: thinking });
  } catch (error) {
    throw toApiError(error, 'messages');
  }
  // A conversation past the context is cut (context shift on), the way the generation shifts.
  const { ids, contextShift } = shiftedPrompt(ctx.served.contextShift, rendered.ids, model);
  const prompt: ChatPrompt = ids === rendered.ids ? rendered : { ...rendered, ids };
  const promptTokens = prompt.ids.length;
  const options: ChatOptions = {
    ...ollamaOptions(body.options, promptTokens, model.contextLength, 'messages', contextShift !== undefined),
    enableThinking: thinking,
    ...(contextShift ? { contextShift } : {}),
  };
  const schema = await formatSchema(body.format);
  if (schema !== undefined) options.jsonSchema = schema;
  const run = scheduler.submit({ kind: 'chat', prompt, options, fields: { prompt: 'messages', maxTokens: NUM_PREDICT_FIELD } }, ctx.signal);
  await answer(ctx, run, body.stream !== false, { model: body.model, shape: chatShape, thinking, harmony: isHarmonyTemplate(model.chatTemplate?.source), promptTokens });
};

/** POST /api/generate: the prompt (and system) in the model's chat template, or as it is with raw: true or a model without one. */
export const ollamaGenerate: Route = async (ctx) => {
  const body = validateOllamaGenerate(await ctx.body());
  const { model, scheduler } = await ollamaTextModel(ctx, body.model, body.keep_alive);
  const shape = (response: string, thinking: string) => ({ response, ...(thinking ? { thinking } : {}) });
  if (body.prompt === undefined || body.prompt === '') {
    sendJson(ctx.res, 200, { model: body.model, created_at: new Date().toISOString(), response: '', done: true, done_reason: body.keep_alive === 0 ? 'unload' : 'load' });
    return;
  }
  const thinking = body.think === true;
  const templated = body.raw !== true && model.chatTemplate !== undefined;
  if (!templated && body.system !== undefined) throw invalidRequest('system needs the chat template: not with raw: true, nor on a model without one', 'system');
  if (!templated && thinking) throw invalidRequest('think needs the chat template: not with raw: true, nor on a model without one', 'think');
  const schema = await formatSchema(body.format);
  let run: ScheduledGeneration;
  let promptTokens: number;
  if (templated) {
    const messages: ChatMessage[] = [...(body.system !== undefined ? [{ role: 'system' as const, content: body.system }] : []), { role: 'user', content: body.prompt }];
    let chatPrompt: ChatPrompt;
    try {
      chatPrompt = await model.chatPrompt(messages, { enableThinking: thinking });
    } catch (error) {
      throw toApiError(error, 'prompt');
    }
    // A prompt past the context is cut (context shift on), as /api/chat cuts a conversation.
    const { ids, contextShift } = shiftedPrompt(ctx.served.contextShift, chatPrompt.ids, model);
    const prompt: ChatPrompt = ids === chatPrompt.ids ? chatPrompt : { ...chatPrompt, ids };
    promptTokens = ids.length;
    const options: ChatOptions = { ...ollamaOptions(body.options, promptTokens, model.contextLength, 'prompt', contextShift !== undefined), enableThinking: thinking, ...(contextShift ? { contextShift } : {}) };
    if (schema !== undefined) options.jsonSchema = schema;
    run = scheduler.submit({ kind: 'chat', prompt, options, fields: { prompt: 'prompt', maxTokens: NUM_PREDICT_FIELD } }, ctx.signal);
  } else {
    const { ids, contextShift } = shiftedPrompt(ctx.served.contextShift, model.encode(body.prompt), model);
    promptTokens = ids.length;
    const options = { ...ollamaOptions(body.options, promptTokens, model.contextLength, 'prompt', contextShift !== undefined), ...(contextShift ? { contextShift } : {}) };
    if (schema !== undefined) options.jsonSchema = schema;
    run = scheduler.submit({ kind: 'text', prompt: [...ids], options, fields: { prompt: 'prompt', maxTokens: NUM_PREDICT_FIELD } }, ctx.signal);
  }
  await answer(ctx, run, body.stream !== false, { model: body.model, shape, thinking, promptTokens });
};

/** POST /api/embed: truncated to the model's sequence length unless truncate: false (then 400). */
export const ollamaEmbed: Route = async (ctx) => {
  const started = performance.now();
  const body = validateOllamaEmbed(await ctx.body());
  const { embedder, queue, metrics } = await ollamaEmbedder(ctx, body.model, body.keep_alive);
  const dimensions = embeddingDimensions(embedder, body.dimensions);
  const texts = typeof body.input === 'string' ? [body.input] : body.input;
  const ids = texts.map((text, i) => {
    const full = embedder.tokenizer.encode(text);
    if (full.length > embedder.maxSeqLength && body.truncate === false) {
      throw invalidRequest(`input${typeof body.input === 'string' ? '' : `[${i}]`} has ${full.length} tokens; the model takes ${embedder.maxSeqLength} (truncate: false)`, 'input');
    }
    return embedder.tokenizer.encode(text, { maxLength: embedder.maxSeqLength });
  });
  const release = await queue.enter(ctx.signal);
  let vectors: Float32Array[];
  try {
    vectors = await embedder.embedTokens(ids, { dimensions, signal: ctx.signal });
  } finally {
    release();
  }
  const tokens = ids.reduce((sum, seq) => sum + seq.length, 0);
  metrics?.embedded(tokens);
  ctx.log.promptTokens = tokens;
  sendJson(ctx.res, 200, { model: body.model, embeddings: vectors.map((v) => Array.from(v)), total_duration: ns(performance.now() - started), load_duration: 0, prompt_eval_count: tokens });
};

export const ollamaShow: Route = async (ctx) => {
  const body = validateOllamaShow(await ctx.body());
  sendJson(ctx.res, 200, show(ctx.served, body.model));
};

/** The Ollama routes by method and path. */
export const OLLAMA_ROUTES: Record<string, { method: 'GET' | 'POST'; route: Route }> = {
  '/api/version': { method: 'GET', route: async (ctx) => sendJson(ctx.res, 200, { version: version() }) },
  '/api/tags': { method: 'GET', route: async (ctx) => sendJson(ctx.res, 200, tags(ctx.served)) },
  '/api/ps': { method: 'GET', route: async (ctx) => sendJson(ctx.res, 200, running(ctx.served)) },
  '/api/show': { method: 'POST', route: ollamaShow },
  '/api/chat': { method: 'POST', route: ollamaChat },
  '/api/generate': { method: 'POST', route: ollamaGenerate },
  '/api/embed': { method: 'POST', route: ollamaEmbed },
};
