/**
 * POST /v1/chat/completions: the model's chat template, response_format (json_object, json_schema)
 * as constrained output, and Qwen3's thinking through `chat_template_kwargs: { enable_thinking }`
 * (the thinking comes back apart from the answer, as `reasoning_content`).
 */
import type { ChatMessage } from '../../chat';
import { splitThinking } from '../../chat';
import type { ChatOptions } from '../../model';
import { toApiError } from '../api-error';
import { textModel, type RouteContext } from '../context';
import { maxTokens, responseSchema, samplingOptions } from '../openai-params';
import { ThinkingSplitter } from '../thinking-stream';
import { validateChatCompletion, type ChatMessageBody } from '../validation';
import { respondStream, respondWhole, type Choice, type ChoiceStream } from './generation-response';

function toChatMessage(m: ChatMessageBody): ChatMessage {
  const content = typeof m.content === 'string' ? m.content : m.content.map((part) => part.text).join('');
  return {
    role: m.role === 'developer' ? 'system' : m.role,
    content,
    ...(m.reasoning_content !== undefined ? { reasoningContent: m.reasoning_content } : {}),
  };
}

export async function chatCompletions(ctx: RouteContext): Promise<void> {
  const body = validateChatCompletion(await ctx.body());
  const { id, model, scheduler } = textModel(ctx.served, body.model);
  const messages = body.messages.map(toChatMessage);
  const thinking = body.chat_template_kwargs?.enable_thinking === true;
  let promptTokens: number;
  try {
    // What Model.chat feeds: the rendered template, its special tokens written as text.
    promptTokens = model.tokenizer.encode(model.renderChat(messages, { enableThinking: thinking }), { addSpecialTokens: false }).length;
  } catch (error) {
    throw toApiError(error, 'messages');
  }
  const options: ChatOptions = {
    ...samplingOptions(body, model.vocabSize),
    enableThinking: thinking,
    maxTokens: maxTokens(body.max_completion_tokens ?? body.max_tokens, Infinity, promptTokens, model.contextLength, 'messages'),
  };
  const schema = responseSchema(body);
  if (schema !== undefined) options.jsonSchema = schema;
  const run = scheduler.submit({ kind: 'chat', messages, options }, ctx.signal);

  const shape = {
    object: 'chat.completion',
    chunkObject: 'chat.completion.chunk',
    idPrefix: 'chatcmpl',
    model: id,
    choice: (text: string, finish: string): Choice => {
      const { reasoning, content } = thinking ? splitThinking(text) : { reasoning: '', content: text };
      const message = { role: 'assistant', content, ...(reasoning ? { reasoning_content: reasoning } : {}) };
      return { index: 0, message, logprobs: null, finish_reason: finish };
    },
  };
  if (!body.stream) return respondWhole(ctx, run, promptTokens, shape);

  const delta = (d: Record<string, string>, finish: string | null = null): Choice => ({ index: 0, delta: d, logprobs: null, finish_reason: finish });
  const splitter = thinking ? new ThinkingSplitter() : undefined;
  const deltas = ({ reasoning, content }: { reasoning: string; content: string }) => [
    ...(reasoning ? [delta({ reasoning_content: reasoning })] : []),
    ...(content ? [delta({ content })] : []),
  ];
  const stream: ChoiceStream = {
    opening: () => [delta({ role: 'assistant', content: '' })],
    push: (text) => deltas(splitter ? splitter.push(text) : { reasoning: '', content: text }),
    flush: () => (splitter ? deltas(splitter.flush()) : []),
    finish: (reason) => delta({}, reason),
  };
  return respondStream(ctx, run, promptTokens, body.stream_options?.include_usage === true, shape, stream);
}
