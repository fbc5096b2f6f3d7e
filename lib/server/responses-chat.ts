/**
 * A Responses API request as the chat-completions body it runs as, so that it takes the chat path
 * (the model's template, tools under the mask, response_format); and the chat path's errors with
 * the Responses request's field names. Nothing is stored: previous_response_id and conversation
 * are 400s.
 */
import { ApiError, invalidRequest } from './api-error';
import type { ResponsePart, ResponsesBody } from './responses-schema';
import type { ChatCompletionBody, ChatMessageBody } from './validation';

type ChatContent = Exclude<ChatMessageBody['content'], string | null | undefined>;

/**
 * A content list as chat content: text parts, and input_image parts as image_url parts (a Moondream
 * model answers them; others refuse them naming the part). A file_id or an input_file is a 400.
 */
function chatContent(content: string | ResponsePart[], field: string): string | ChatContent {
  if (typeof content === 'string') return content;
  return content.map((part, i) => {
    if (part.type === 'input_image') {
      if (typeof part.image_url !== 'string') throw invalidRequest(`${field}[${i}]: an input_image needs its image_url (a data URL); this server holds no files`, `${field}[${i}].image_url`);
      return { type: 'image_url' as const, image_url: { url: part.image_url } };
    }
    if (part.type === 'input_file') throw invalidRequest(`${field}[${i}]: input_file parts are not supported (this server holds no files)`, `${field}[${i}].type`);
    return { type: 'text' as const, text: part.type === 'refusal' ? (part.refusal ?? '') : (part.text ?? '') };
  });
}

/** Text only (a function call's output). */
function textOf(content: string | ResponsePart[], field: string): string {
  const chat = chatContent(content, field);
  if (typeof chat === 'string') return chat;
  return chat.map((part, i) => {
    if (part.type !== 'text') throw invalidRequest(`${field}[${i}]: a function call's output is text`, `${field}[${i}].type`);
    return part.text;
  }).join('');
}

/** A chat body with, for each of its messages, the Responses field it came from (for the errors' names). */
export interface ChatBodyOf {
  chat: ChatCompletionBody;
  /** sources[k]: the field chat message k came from ('instructions', or input[i]). */
  sources: string[];
}

/** The input items as chat messages: consecutive function_call items join the assistant turn before them. */
function inputMessages(input: ResponsesBody['input'], instructions: string | null | undefined): { messages: ChatMessageBody[]; sources: string[] } {
  const messages: ChatMessageBody[] = instructions ? [{ role: 'system', content: instructions }] : [];
  const sources: string[] = instructions ? ['instructions'] : [];
  if (typeof input === 'string') return { messages: [...messages, { role: 'user', content: input }], sources: [...sources, 'input'] };
  input.forEach((item, i) => {
    const field = `input[${i}]`;
    if (item.type === 'reasoning') return;
    if (item.type === 'function_call') {
      const last = messages[messages.length - 1];
      const call = { id: item.call_id, type: 'function' as const, function: { name: item.name, arguments: item.arguments } };
      if (last?.role === 'assistant') last.tool_calls = [...(last.tool_calls ?? []), call];
      else (messages.push({ role: 'assistant', content: null, tool_calls: [call] }), sources.push(field));
      return;
    }
    if (item.type === 'function_call_output') {
      messages.push({ role: 'tool', tool_call_id: item.call_id, content: textOf(item.output, `${field}.output`) });
      sources.push(field);
      return;
    }
    messages.push({ role: item.role, content: chatContent(item.content, `${field}.content`) });
    sources.push(field);
  });
  if (messages.length === 0) throw invalidRequest('input: no message to answer (only reasoning items)', 'input');
  return { messages, sources };
}

/** The Responses request as the chat-completions body it runs as. */
export function chatBodyOf(body: ResponsesBody): ChatBodyOf {
  if (body.previous_response_id != null) throw invalidRequest('previous_response_id: this server stores no responses; send the whole conversation in input', 'previous_response_id');
  if (body.conversation != null) throw invalidRequest('conversation: this server stores no conversations; send the whole conversation in input', 'conversation');
  if (body.background === true) throw invalidRequest('background: this server answers in the foreground only', 'background');
  const format = body.text?.format;
  const { messages, sources } = inputMessages(body.input, body.instructions);
  const chat: ChatCompletionBody = {
    model: body.model,
    messages,
    temperature: body.temperature,
    top_p: body.top_p,
    top_k: body.top_k,
    min_p: body.min_p,
    seed: body.seed,
    max_tokens: body.max_output_tokens,
    ...(body.tools?.length
      ? {
          tools: body.tools.map((t) => ({
            type: 'function' as const,
            function: { name: t.name, ...(t.description != null ? { description: t.description } : {}), ...(t.parameters != null ? { parameters: t.parameters } : {}) },
          })),
        }
      : {}),
    ...(body.tool_choice != null ? { tool_choice: typeof body.tool_choice === 'string' ? body.tool_choice : { type: 'function' as const, function: { name: body.tool_choice.name } } } : {}),
    ...(body.parallel_tool_calls != null ? { parallel_tool_calls: body.parallel_tool_calls } : {}),
    ...(format && format.type !== 'text'
      ? { response_format: format.type === 'json_object' ? { type: 'json_object' } : { type: 'json_schema', json_schema: { name: format.name ?? 'response', ...(format.schema !== undefined ? { schema: format.schema } : {}) } } }
      : {}),
    ...(body.reasoning?.effort != null ? { reasoning_effort: body.reasoning.effort } : {}),
    ...(body.chat_template_kwargs ? { chat_template_kwargs: body.chat_template_kwargs } : {}),
  };
  if (format?.type === 'json_schema' && format.schema === undefined) throw invalidRequest("text.format of type 'json_schema' needs a schema", 'text.format.schema');
  return { chat, sources };
}

/** The chat path's field names in an error, as the Responses request names them (`sources`: chatBodyOf's). */
const RENAMES: [RegExp, string][] = [
  [/\btools\[(\d+)\]\.function\./g, 'tools[$1].'],
  [/\btool_choice\.function\.name\b/g, 'tool_choice.name'],
  [/\bresponse_format\.json_schema\.schema\b/g, 'text.format.schema'],
  [/\bresponse_format\b/g, 'text.format'],
  [/\bmax_tokens\b/g, 'max_output_tokens'],
];

export function renamedError(error: ApiError, sources: readonly string[] = []): ApiError {
  const rename = (text: string) =>
    RENAMES.reduce((t, [from, to]) => t.replace(from, to), text)
      // messages[k].content[j] → the input item message k came from (its content list, when it has one).
      .replace(/\bmessages\[(\d+)\]/g, (whole, k: string) => sources[Number(k)] ?? whole)
      .replace(/\bmessages\b/g, 'input');
  return new ApiError(error.status, rename(error.message), error.type, error.param === null ? null : rename(error.param), error.code, error.headers);
}
