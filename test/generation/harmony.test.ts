/**
 * Harmony (gpt-oss's chat format): the real template rendered through weightmap's Jinja path
 * (system, developer instructions, reasoning_effort, tools in the developer message, an assistant's
 * call and the tool's result, as OpenAI's Harmony spec writes them), and replies parsed by their
 * channels: the parser is fed what the template itself writes for an assistant turn (reasoning,
 * answer, call), whole and streamed as the real o200k_harmony tokenizer cuts it, one character at a
 * time and at random cuts. Skipped without the template (harmony-template.ts).
 */
import * as nodePath from 'node:path';
import { jinjaChatTemplate, type ChatMessage, type ChatTemplate } from '../../lib/generation/chat';
import { harmonyCallHeader, HarmonyStreamer, isHarmonyTemplate, parseHarmonyReply, type HarmonyReply } from '../../lib/generation/harmony';
import { detectToolFormat } from '../../lib/tools/formats';
import { parseToolCalls } from '../../lib/tools/parse';
import { prepareToolPrompt } from '../../lib/tools/tool-prompt';
import type { Generation } from '../../lib/generation/generate';
import { ChatSession } from '../../lib/models/chat-session';
import { tokenizerFromJson, type Tokenizer } from '../../lib/tokenizers';
import { familyJson } from '../tokenizers/family-reference';
import { mulberry32 } from '../helpers/rng';
import { gptOssTemplateSource, GPT_OSS_TEMPLATE_PATH } from './harmony-template';

const source = gptOssTemplateSource();
const suite = source ? describe : describe.skip;
if (!source) console.warn(`harmony.test.ts: skipped, no ${GPT_OSS_TEMPLATE_PATH}`);

const WEATHER = {
  name: 'get_weather',
  description: 'Gets the weather',
  parameters: { type: 'object', properties: { city: { type: 'string', description: 'The city' }, days: { type: 'integer' } }, required: ['city'] },
};
const TIME = { name: 'get_time', description: 'Gets the time', parameters: { type: 'object', properties: { zone: { type: 'string', enum: ['UTC', 'CET'] } } } };

let ids = 0;
const newId = () => `call_${ids++}`;

/** The reply the model writes after the prompt's `<|start|>assistant`, as the template writes the turn (its stop token left off, as generation leaves it). */
function replyOf(template: ChatTemplate, before: ChatMessage[], turn: ChatMessage): string {
  const prompt = template.render(before, { addGenerationPrompt: true });
  const whole = template.render([...before, turn], { addGenerationPrompt: false });
  expect(prompt.endsWith('<|start|>assistant')).toBe(true);
  expect(whole.startsWith(prompt)).toBe(true);
  return whole.slice(prompt.length).replace(/<\|(return|call)\|>$/, '');
}

function streamed(pieces: readonly string[], ended = true): HarmonyReply {
  const s = new HarmonyStreamer(newId);
  let reasoning = '';
  let content = '';
  for (const p of pieces) {
    const out = s.push(p);
    reasoning += out.reasoning;
    content += out.content;
  }
  const rest = s.finish(ended);
  return { ...rest, reasoning: reasoning + rest.reasoning, content: content + rest.content };
}

/** The reply as the tokenizer cuts it (decoded one token at a time, special tokens kept), per character, and at random cuts. */
function splits(text: string, tokenizer: Tokenizer): string[][] {
  const decoder = tokenizer.createStreamDecoder({ skipSpecialTokens: false });
  const byToken = tokenizer.encode(text, { addSpecialTokens: false }).map((id) => decoder.push(id));
  byToken.push(decoder.flush());
  expect(byToken.join('')).toBe(text);
  const r = mulberry32(5);
  const random: string[] = [];
  for (let at = 0; at < text.length; ) {
    const n = 1 + Math.floor(r() * 7);
    random.push(text.slice(at, at + n));
    at += n;
  }
  return [byToken, Array.from(text), random];
}

const strip = ({ calls, ...rest }: HarmonyReply) => ({ ...rest, calls: calls.map(({ name, arguments: args }) => ({ name, arguments: args })) });

suite('Harmony: gpt-oss\'s template and replies', () => {
  let template: ChatTemplate;
  let tokenizer: Tokenizer;
  beforeAll(() => {
    template = jinjaChatTemplate(source!, { bosToken: '<|startoftext|>', eosToken: '<|return|>' });
    tokenizer = tokenizerFromJson(familyJson('gptoss', 'tokenizer.json'), 'gptoss', familyJson('gptoss', 'tokenizer_config.json'));
  }, 60_000);

  it('is told from the template\'s text: Harmony tool calls, stop tokens <|return|> and <|call|> (not <|end|>, which ends one message)', () => {
    expect(isHarmonyTemplate(source)).toBe(true);
    expect(detectToolFormat(source)).toMatchObject({ family: 'harmony', templateRendersTools: true });
    expect([...template.stopTokenTexts].sort()).toEqual(['<|call|>', '<|return|>']);
    // and no other template is taken for Harmony
    expect(isHarmonyTemplate(familyJson('llama3_1', 'tokenizer_config.json').chat_template)).toBe(false);
  });

  it('renders the system message (reasoning_effort from the template kwargs), developer instructions and tools, a call and its result as the Harmony spec writes them', async () => {
    const messages: ChatMessage[] = [
      { role: 'system', content: 'Be terse.' },
      { role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: '', reasoningContent: 'Need the tool.', toolCalls: [{ id: 'c1', name: 'get_weather', arguments: '{"city": "Paris"}' }] },
      { role: 'tool', content: '{"c": 20}', toolCallId: 'c1' },
    ];
    const text = await template.renderAsync(messages, { tools: [WEATHER], templateKwargs: { reasoning_effort: 'high' } });
    expect(text.startsWith('<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\nKnowledge cutoff: 2024-06\nCurrent date: ')).toBe(true);
    expect(text).toContain('\n\nReasoning: high\n\n# Valid channels: analysis, commentary, final. Channel must be included for every message.\nCalls to these tools must go to the commentary channel: \'functions\'.<|end|>');
    expect(text).toContain(
      '<|start|>developer<|message|># Instructions\n\nBe terse.\n\n# Tools\n\n## functions\n\nnamespace functions {\n\n// Gets the weather\ntype get_weather = (_: {\n// The city\ncity: string,\ndays?: number,\n}) => any;\n\n} // namespace functions<|end|>',
    );
    expect(text).toContain(
      '<|start|>user<|message|>Weather in Paris?<|end|><|start|>assistant<|channel|>analysis<|message|>Need the tool.<|end|>' +
        '<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{"city": "Paris"}<|call|>' +
        '<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>"{\\"c\\": 20}"<|end|><|start|>assistant',
    );
    expect(text.endsWith('<|start|>assistant')).toBe(true);
    // without a system message or tools there is no developer message; the default effort is medium
    const plain = template.render([{ role: 'user', content: 'Hi' }]);
    expect(plain).toContain('Reasoning: medium');
    expect(plain).not.toContain('<|start|>developer');
  });

  const cases: [string, (t: ChatTemplate) => string, Omit<HarmonyReply, 'calls'> & { calls: { name: string; arguments: string }[] }][] = [
    ['reasoning then the answer', (t) => replyOf(t, [{ role: 'user', content: 'Hi' }], { role: 'assistant', content: 'Hello there, 世界 🦙!', reasoningContent: 'The user greets. <think> is just text.' }),
      { reasoning: 'The user greets. <think> is just text.', content: 'Hello there, 世界 🦙!', calls: [], cutShort: false }],
    ['the answer alone', (t) => replyOf(t, [{ role: 'user', content: 'Hi' }], { role: 'assistant', content: 'Hello.' }), { reasoning: '', content: 'Hello.', calls: [], cutShort: false }],
    ['reasoning then a call (the template\'s form: the recipient before the channel)', (t) => replyOf(t, [{ role: 'user', content: 'Weather?' }], { role: 'assistant', content: '', reasoningContent: 'Use get_weather.', toolCalls: [{ id: 'x', name: 'get_weather', arguments: '{"city": "Paris", "days": 2}' }] }),
      { reasoning: 'Use get_weather.', content: '', calls: [{ name: 'get_weather', arguments: '{"city": "Paris", "days": 2}' }], cutShort: false }],
    ['a call in the model\'s own form (recipient after the channel, <|constrain|>json)', () => `<|channel|>analysis<|message|>Think.<|end|><|start|>assistant${harmonyCallHeader('get_time')}{"zone":"UTC"}`,
      { reasoning: 'Think.', content: '', calls: [{ name: 'get_time', arguments: '{"zone":"UTC"}' }], cutShort: false }],
    ['a preamble on commentary (content), then the answer', () => '<|channel|>commentary<|message|>Checking.<|end|><|start|>assistant<|channel|>final<|message|>Done.',
      { reasoning: '', content: 'Checking.Done.', calls: [], cutShort: false }],
  ];
  it.each(cases)('%s: whole and streamed, split anywhere, the same reasoning, content and calls', (_name, make, expected) => {
    const reply = make(template);
    expect(strip(parseHarmonyReply(reply, true, newId))).toEqual(expected);
    for (const pieces of splits(reply, tokenizer)) expect(strip(streamed(pieces))).toEqual(expected);
  });

  it('a call cut by the token limit is dropped (cutShort), never returned half-written; an answer cut there is kept', () => {
    const reply = `<|channel|>analysis<|message|>Go.<|end|><|start|>assistant${harmonyCallHeader('get_weather')}{"city": "Par`;
    for (const pieces of splits(reply, tokenizer)) expect(strip(streamed(pieces, false))).toEqual({ reasoning: 'Go.', content: '', calls: [], cutShort: true });
    expect(strip(parseHarmonyReply('<|channel|>final<|message|>Half an ans', false, newId))).toEqual({ reasoning: '', content: 'Half an ans', calls: [], cutShort: false });
  });
  it('a reply without any Harmony marker is all content', () => {
    expect(strip(parseHarmonyReply('Just text, no channels.', true, newId))).toEqual({ reasoning: '', content: 'Just text, no channels.', calls: [], cutShort: false });
  });
  it('parseToolCalls (the agent loop\'s parse) reads Harmony calls by the format the template tells', () => {
    const reply = replyOf(template, [{ role: 'user', content: 'Weather?' }], { role: 'assistant', content: '', toolCalls: [{ id: 'x', name: 'get_weather', arguments: '{"city": "Oslo"}' }] });
    const parsed = parseToolCalls(reply, detectToolFormat(source), true);
    expect(parsed.calls.map((c) => [c.name, JSON.parse(c.arguments)])).toEqual([['get_weather', { city: 'Oslo' }]]);
  });

  it('a ChatSession keeps the final channel as the reply and the analysis as its reasoning; the next turn renders', async () => {
    const reply = replyOf(template, [{ role: 'user', content: 'Hi' }], { role: 'assistant', content: 'Hello!', reasoningContent: 'Greet back.' });
    const [byToken] = splits(reply, tokenizer);
    const chat = (_messages: readonly ChatMessage[]) => {
      const generation = (async function* () {
        for (const text of byToken) yield { token: 0, text };
      })();
      return Object.assign(generation, { stopReason: 'stop-token' }) as unknown as Generation;
    };
    const session = new ChatSession({ chat, chatTemplate: template });
    const chunks: string[] = [];
    expect(await session.prompt('Hi', { onTextChunk: (t) => chunks.push(t) })).toBe('Hello!');
    expect(chunks.join('')).toBe('Hello!');
    expect(session.messages[1]).toEqual({ role: 'assistant', content: 'Hello!', reasoningContent: 'Greet back.' });
    expect(template.render([...session.messages, { role: 'user', content: 'Again' }])).toContain('<|start|>assistant<|channel|>final<|message|>Hello!<|end|><|start|>user<|message|>Again<|end|>');
  });

  it('a forced call: one tool ends the prompt with its whole header and constrains the arguments by its schema; several, the header up to the name, the name under the mask, the rest of the header fed', async () => {
    const messages: ChatMessage[] = [{ role: 'user', content: 'Weather?' }];
    const one = await prepareToolPrompt(template, messages, { tools: [WEATHER, TIME], toolChoice: { name: 'get_weather' } });
    expect(one.forcedOpen).toBe('<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>');
    expect(one.constraint).toMatchObject({ forced: true, single: true, lead: one.forcedOpen });
    const prompt = (await template.renderAsync(one.messages, one.render)) + one.forcedOpen;
    // The prompt, as the model continues it with arguments and <|call|>, is the template's own form of that call.
    expect(strip(parseHarmonyReply(prompt.slice(prompt.lastIndexOf('<|start|>assistant') + '<|start|>assistant'.length) + '{"city": "Rome"}', true, newId)).calls).toEqual([{ name: 'get_weather', arguments: '{"city": "Rome"}' }]);
    const many = await prepareToolPrompt(template, messages, { tools: [WEATHER, TIME], toolChoice: 'required' });
    expect(many.forcedOpen).toBe('<|channel|>commentary to=functions.');
    expect(many.constraint).toMatchObject({ open: '<|message|>', forced: true, single: true, lead: many.forcedOpen, naming: { after: '<|constrain|>json<|message|>' } });
    const grammarFor = many.constraint!.grammarFor!;
    expect(grammarFor('get_time <|constrain|>json')).toBeUndefined(); // the header read is the whole tail, lead included, below
    expect(grammarFor('<|channel|>commentary to=functions.get_time <|constrain|>json')).toBeDefined();
    expect(grammarFor('<|channel|>commentary to=functions.get_time <|constrain|>json')).not.toBe(grammarFor('<|channel|>analysis<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json'));
    expect(grammarFor('<|channel|>analysis')).toBeUndefined();
    // a schema the mask cannot enforce is refused naming the tool's parameters, as for the other families
    await expect(prepareToolPrompt(template, messages, { tools: [WEATHER, { ...TIME, parameters: { type: 'frob' } as never }], toolChoice: 'required' })).rejects.toThrow(/tools\[1\]\.parameters/);
    const auto = await prepareToolPrompt(template, messages, { tools: [WEATHER, TIME] });
    expect(auto.forcedOpen).toBe('');
    expect(auto.constraint).toMatchObject({ open: '<|message|>', forced: false, single: false });
  });
});
