/** The tool definitions and calls a chat message carries (lib/tools/ builds on them; chat.ts renders them). */
import type { JsonSchema } from '../constrain';

/** A function the model may call (OpenAI's `function` object: name, description, JSON-schema parameters). */
export interface ToolDefinition {
  name: string;
  description?: string;
  /** The arguments' JSON schema (an object schema). Default: no arguments (`{}`). */
  parameters?: JsonSchema;
}

/** A call the model made: `arguments` is JSON text that validated against the tool's parameters when constrained. */
export interface ToolCall {
  id: string;
  name: string;
  arguments: string;
}
