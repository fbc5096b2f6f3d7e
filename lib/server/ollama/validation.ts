/** Ollama request bodies checked against ./schemas.ts (compiled on the first Ollama request); the first problem is a 400 naming its field. */
import { lazy } from '../../base/lazy';
import { invalidRequest } from '../api-error';
import { check } from '../validation';
import { ollamaChatRequest, ollamaEmbedRequest, ollamaGenerateRequest, ollamaShowRequest, type OllamaChatBody, type OllamaEmbedBody, type OllamaGenerateBody, type OllamaShowBody } from './schemas';

/** Compiled when a server is made (createHandler), as the /v1 validators are. */
export const compileOllamaValidators = lazy(() => {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { default: Ajv } = require('ajv') as typeof import('ajv');
  const ajv = new Ajv({ allErrors: false, strict: true, allowUnionTypes: true });
  return {
    chat: ajv.compile<OllamaChatBody>(ollamaChatRequest),
    generate: ajv.compile<OllamaGenerateBody>(ollamaGenerateRequest),
    embed: ajv.compile<OllamaEmbedBody>(ollamaEmbedRequest),
    show: ajv.compile<OllamaShowBody>(ollamaShowRequest),
  };
});

export const validateOllamaChat = (body: unknown) => check(compileOllamaValidators().chat, body);
export const validateOllamaGenerate = (body: unknown) => check(compileOllamaValidators().generate, body);
export const validateOllamaEmbed = (body: unknown) => check(compileOllamaValidators().embed, body);
export function validateOllamaShow(body: unknown): { model: string } {
  const { model, name } = check(compileOllamaValidators().show, body);
  if (model === undefined && name === undefined) throw invalidRequest("missing required field 'model'", 'model');
  return { model: (model ?? name)! };
}
