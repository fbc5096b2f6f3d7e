/**
 * POST /v1/chat/completions: the model's chat template, response_format (json_object, json_schema)
 * as constrained output, Qwen3's thinking through `chat_template_kwargs: { enable_thinking }`
 * (the thinking comes back apart from the answer, as `reasoning_content`), and tools (lib/tools/):
 * calls come back as `tool_calls` with finish_reason 'tool_calls', streamed as tool_calls deltas.
 * A Harmony template's replies (gpt-oss) are read by their channels: analysis as `reasoning_content`,
 * final as the content, commentary to functions.* as the calls.
 */
import type { ChatMessage } from '../../generation/chat';
import type { ChatOptions, ChatPrompt } from '../../models/model';
import { MoondreamModel, questionIds } from '../../models/moondream-model';
import { isHarmonyTemplate } from '../../generation/harmony';
import { hasImages, imageQuestion, visionMessages, type ImageQuestion } from '../image-parts';
import { VisionModel, type VisionChatMessage } from '../../models/vision-model';
import type { ToolChoice, ToolDefinition } from '../../tools/types';
import { invalidRequest, toApiError } from '../api-error';
import { textModel, type RouteContext, type ServedTextModel } from '../context';
import type { ScheduledGeneration } from '../scheduler';
import { choiceOptions, maxTokens, responseSchema, samplingOptions, shiftedPrompt } from '../openai-params';
import { replyReader, type ReplyReader } from '../reply-reader';
import { toolCallDeltas } from '../tool-stream';
import { validateChatCompletion, type ChatCompletionBody, type ChatMessageBody } from '../validation';
import { chatLogprobs } from '../logprobs';
import { respondStream, respondWhole, type Choice, type ChoiceStream, type PieceLogprob } from './generation-response';

function toChatMessage(m: ChatMessageBody): ChatMessage {
  // Image parts never come here: imageQuestion answers them first (lib/server/image-parts.ts).
  const content = m.content == null ? '' : typeof m.content === 'string' ? m.content : m.content.map((part) => (part.type === 'text' ? part.text : '')).join('');
  return {
    role: m.role === 'developer' ? 'system' : m.role,
    content,
    ...(m.reasoning_content !== undefined ? { reasoningContent: m.reasoning_content } : {}),
    ...(m.tool_calls?.length ? { toolCalls: m.tool_calls.map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments })) } : {}),
    ...(m.tool_call_id !== undefined ? { toolCallId: m.tool_call_id } : {}),
    ...(m.name !== undefined ? { name: m.name } : {}),
  };
}

/** The request's tools and tool choice as the library takes them (undefined: no tools). */
function toolOptions(body: ChatCompletionBody): { tools?: ToolDefinition[]; toolChoice?: ToolChoice; parallelToolCalls?: boolean } {
  if (!body.tools?.length) {
    if (body.tool_choice != null && body.tool_choice !== 'none' && body.tool_choice !== 'auto') throw invalidRequest('tool_choice needs tools', 'tool_choice');
    return {};
  }
  const names = new Set<string>();
  const tools = body.tools.map((t, i) => {
    if (names.has(t.function.name)) throw invalidRequest(`tools[${i}].function.name: '${t.function.name}' is defined twice`, `tools[${i}].function.name`);
    names.add(t.function.name);
    return { name: t.function.name, ...(t.function.description !== undefined ? { description: t.function.description } : {}), ...(t.function.parameters !== undefined ? { parameters: t.function.parameters } : {}) };
  });
  const choice = body.tool_choice ?? 'auto';
  const toolChoice: ToolChoice = typeof choice === 'string' ? choice : { name: choice.function.name };
  if (typeof toolChoice === 'object' && !names.has(toolChoice.name)) throw invalidRequest(`tool_choice: no tool named '${toolChoice.name}' is defined`, 'tool_choice.function.name');
  if (toolChoice !== 'none' && body.response_format !== undefined && body.response_format.type !== 'text') {
    throw invalidRequest('response_format and tools (with a tool_choice other than none) cannot be combined', 'response_format');
  }
  return { tools, toolChoice, ...(body.parallel_tool_calls != null ? { parallelToolCalls: body.parallel_tool_calls } : {}) };
}

/** chat_template_kwargs other than enable_thinking, and reasoning_effort, as the template's variables. */
function templateKwargs(body: ChatCompletionBody): Record<string, unknown> {
  const { enable_thinking: _thinking, ...rest } = body.chat_template_kwargs ?? {};
  return { ...rest, ...(body.reasoning_effort != null ? { reasoning_effort: body.reasoning_effort } : {}) };
}

/** Which field an error from rendering and encoding the prompt came from. */
const promptField = (error: unknown) => (error instanceof Error && /^tools\b|\(tools\[/.test(error.message) ? 'tools' : 'messages');

/** A chat request made ready to run: its model, its prompt as fed, and how to start each choice's generation. */
export interface PreparedChat {
  id: string;
  model: ServedTextModel['model'];
  promptTokens: number;
  wantLogprobs: boolean;
  /** How its replies become reasoning, content and calls. */
  reply: ReplyReader;
  start: (index: number) => ScheduledGeneration;
}

/** The chat path /v1/chat/completions and /v1/responses share: the template, the tools, the sampling, the schema. */
export async function prepareChat(ctx: RouteContext, body: ChatCompletionBody): Promise<PreparedChat> {
  const { id, model, scheduler } = await textModel(ctx, body.model);
  if (model instanceof VisionModel && hasImages(body.messages)) return prepareVisionChat(ctx, body, { id, model, scheduler });
  const asked = imageQuestion(body.messages, model instanceof MoondreamModel, ctx.served.imageDirs ?? []);
  if (asked) return prepareAnswer(ctx, body, { id, model: model as MoondreamModel, scheduler }, asked);
  const messages = body.messages.map(toChatMessage);
  const thinking = body.chat_template_kwargs?.enable_thinking === true;
  const tools = toolOptions(body);
  let rendered: ChatPrompt;
  try {
    // Rendered and encoded once (off the JS thread): its length is the usage, its ids are fed.
    rendered = await model.chatPrompt(messages, { enableThinking: thinking, templateKwargs: templateKwargs(body), ...tools });
  } catch (error) {
    throw toApiError(error, promptField(error));
  }
  // A conversation past the context is cut (context shift on), the way the generation shifts.
  const { ids, contextShift } = shiftedPrompt(ctx.served.contextShift, rendered.ids, model, body.n_keep);
  const prompt: ChatPrompt = ids === rendered.ids ? rendered : { ...rendered, ids };
  const promptTokens = prompt.ids.length;
  const options: ChatOptions = {
    ...samplingOptions(body, model.vocabSize),
    enableThinking: thinking,
    maxTokens: maxTokens(body.max_completion_tokens ?? body.max_tokens, Infinity, promptTokens, model.contextLength, 'messages', contextShift !== undefined),
    ...(contextShift ? { contextShift } : {}),
  };
  if (body.top_logprobs != null && body.logprobs !== true) throw invalidRequest('top_logprobs needs logprobs: true', 'top_logprobs');
  const wantLogprobs = body.logprobs === true;
  if (wantLogprobs) options.logprobs = body.top_logprobs ?? 0;
  const schema = await responseSchema(body);
  if (schema !== undefined) options.jsonSchema = schema;
  const start = (index: number) => scheduler.submit({ kind: 'chat', prompt, options: choiceOptions(options, index) }, ctx.signal);
  // Replies are parsed for calls when the model may make them.
  const toolFormat = tools.toolChoice !== undefined && tools.toolChoice !== 'none' ? prompt.tools?.format : undefined;
  const harmony = isHarmonyTemplate(model.chatTemplate?.source);
  return { id, model, promptTokens, wantLogprobs, reply: replyReader({ harmony, thinking, toolFormat }), start };
}

/**
 * A chat with image parts for a model loaded with its mmproj: model.chat(messages with images)
 * through the scheduler. The images are decoded and encoded here (a bad one is a 400 before the
 * reply starts; the model keeps their embeddings for the chat), the prompt's positions counted.
 */
async function prepareVisionChat(ctx: RouteContext, body: ChatCompletionBody, served: { id: string; model: VisionModel; scheduler: ServedTextModel['scheduler'] }): Promise<PreparedChat> {
  const { id, model, scheduler } = served;
  if (body.tools?.length && body.tool_choice !== 'none') throw invalidRequest('tools: not supported yet with image parts', 'tools');
  if (body.response_format !== undefined && body.response_format.type !== 'text') throw invalidRequest('response_format: not supported yet with image parts', 'response_format');
  const messages: VisionChatMessage[] = visionMessages<VisionChatMessage>(body.messages, ctx.served.imageDirs ?? [], (m) => {
    const { content: _text, ...rest } = toChatMessage({ ...m, content: '' });
    return rest;
  });
  const thinking = body.chat_template_kwargs?.enable_thinking === true;
  let promptTokens: number;
  try {
    for (const m of messages) if (typeof m.content !== 'string') for (const part of m.content) if (part.type === 'image') await model.encodeImage(part.image, { signal: ctx.signal });
    promptTokens = await model.chatPromptTokens(messages, { enableThinking: thinking, templateKwargs: templateKwargs(body) });
  } catch (error) {
    throw toApiError(error, 'messages');
  }
  const options: ChatOptions = {
    ...samplingOptions(body, model.vocabSize),
    enableThinking: thinking,
    templateKwargs: templateKwargs(body),
    maxTokens: maxTokens(body.max_completion_tokens ?? body.max_tokens, Infinity, promptTokens, model.contextLength, 'messages'),
  };
  if (body.top_logprobs != null && body.logprobs !== true) throw invalidRequest('top_logprobs needs logprobs: true', 'top_logprobs');
  const wantLogprobs = body.logprobs === true;
  if (wantLogprobs) options.logprobs = body.top_logprobs ?? 0;
  const start = (index: number) => scheduler.submit({ kind: 'vision-chat', messages, promptTokens, options: choiceOptions(options, index) }, ctx.signal);
  return { id, model, promptTokens, wantLogprobs, reply: replyReader({ harmony: false, thinking, toolFormat: undefined }), start };
}

/** A question about an image for a Moondream model: model.answer(image, question) through the scheduler. */
function prepareAnswer(ctx: RouteContext, body: ChatCompletionBody, served: { id: string; model: MoondreamModel; scheduler: ServedTextModel['scheduler'] }, asked: ImageQuestion): PreparedChat {
  const { id, model, scheduler } = served;
  if (body.tools?.length && body.tool_choice !== 'none') throw invalidRequest('tools: a Moondream answer about an image makes no tool calls', 'tools');
  if (body.response_format !== undefined && body.response_format.type !== 'text') throw invalidRequest('response_format: a Moondream answer about an image is text', 'response_format');
  if (body.logprobs === true) throw invalidRequest('logprobs: not returned for an answer about an image', 'logprobs');
  const vision = model.moondream.config.vision;
  // BOS, a row per image patch, the question's tokens (as model.answer feeds them).
  const promptTokens = 1 + (vision.imageSize / vision.patchSize) ** 2 + questionIds(model.tokenizer, asked.question).length;
  const options = {
    ...samplingOptions(body, model.vocabSize),
    maxTokens: maxTokens(body.max_completion_tokens ?? body.max_tokens, Infinity, promptTokens, model.contextLength, 'messages'),
  };
  const start = (index: number) => scheduler.submit({ kind: 'answer', image: asked.image, question: asked.question, promptTokens, options: choiceOptions(options, index) }, ctx.signal);
  return { id, model, promptTokens, wantLogprobs: false, reply: replyReader({ harmony: false, thinking: false, toolFormat: undefined }), start };
}

export async function chatCompletions(ctx: RouteContext): Promise<void> {
  const body = validateChatCompletion(await ctx.body(), ctx.served.strict);
  const { id, model, promptTokens, wantLogprobs, reply, start } = await prepareChat(ctx, body);
  const n = body.n ?? 1;

  const shape = {
    object: 'chat.completion',
    chunkObject: 'chat.completion.chunk',
    idPrefix: 'chatcmpl',
    model: id,
    choice: (text: string, finish: string, logprobs: PieceLogprob[]): Choice => {
      const { reasoning, content, calls } = reply.whole(text, finish !== 'length');
      const message = {
        role: 'assistant',
        content: calls.length && !content ? null : content,
        ...(reasoning ? { reasoning_content: reasoning } : {}),
        ...(calls.length ? { tool_calls: calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })) } : {}),
      };
      const chosen = wantLogprobs ? chatLogprobs(model.tokenizer, logprobs) : null;
      return { index: 0, message, logprobs: chosen, finish_reason: calls.length && finish !== 'length' ? 'tool_calls' : finish };
    },
  };
  if (!body.stream) return respondWhole(ctx, start, n, promptTokens, shape);

  // Each choice's stream state (the thinking split, the held tool calls) is its own.
  const streamOf = (): ChoiceStream => {
    const delta = (d: Record<string, unknown>, finish: string | null = null): Choice => ({ index: 0, delta: d, logprobs: null, finish_reason: finish });
    const read = reply.stream();
    let madeCalls = false;
    const deltas = ({ reasoning, content }: { reasoning: string; content: string }) => [
      ...(reasoning ? [delta({ reasoning_content: reasoning })] : []),
      ...(content ? [delta({ content })] : []),
    ];
    const stream: ChoiceStream = {
      opening: () => [delta({ role: 'assistant', content: '' })],
      push: (text, piece) => {
        const out = deltas(read.push(text));
        if (!wantLogprobs || !piece.logprob) return out;
        // Each token's logprobs go with the delta of its text (an empty one while its text is held).
        const withLogprobs = out.length ? out[0] : delta({ content: '' });
        withLogprobs.logprobs = chatLogprobs(model.tokenizer, [{ token: piece.token, ...piece.logprob }]);
        return out.length ? out : [withLogprobs];
      },
      flush: (finished) => {
        const rest = read.finish(finished !== 'length');
        madeCalls = rest.calls.length > 0;
        return [...deltas(rest), ...toolCallDeltas(rest.calls).map((d) => delta({ tool_calls: [d] }))];
      },
      finish: (reason) => delta({}, madeCalls && reason !== 'length' ? 'tool_calls' : reason),
    };
    return stream;
  };
  return respondStream(ctx, start, n, promptTokens, body.stream_options?.include_usage === true, shape, streamOf);
}
