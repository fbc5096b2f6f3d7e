/** Tool calling: definitions, the families' call formats, the reply parser and the agent loop. */
export { detectToolFormat } from './formats';
export type { ToolCallFormat, ToolFamily } from './formats';
export { parseToolCalls } from './parse';
export type { ParsedReply } from './parse';
export type { ToolChatOptions } from './tool-prompt';
export { TOOL_LIMITS } from './types';
export type { ToolCall, ToolChoice, ToolDefinition } from './types';
