/**
 * Harmony through the server (gpt-oss's format, issue #25 item 1 / #27 item 2): a tiny random Llama
 * carrying gpt-oss's real tokenizer.json and chat template (harmony-template.ts), served and asked
 * through the official openai client. A named function is forced: the prompt ends with Harmony's
 * call header and the arguments are generated under the tool's schema, so even random weights
 * return a call that validates (ajv), finish_reason 'tool_calls', whole and streamed; the stop
 * tokens are <|return|> and <|call|>. Skipped without the template.
 */
import * as fs from 'node:fs';
import * as nodePath from 'node:path';
import Ajv from 'ajv';
import type OpenAI from 'openai';
import { loadModel, type Model } from '../../lib/models/model';
import { tinyDecoder, writeHfFolder } from '../engines/tiny-decoder';
import { ALARM_TOOL, BOUNDED_TOOLS } from '../helpers/tool-model';
import { testWorkspace } from '../helpers/workspace';
import { familyDir, familyJson } from '../tokenizers/family-reference';
import { useTempTokenizerCache } from '../tokenizers/family-compare';
import { gptOssTemplateSource } from '../generation/harmony-template';
import { parseHarmonyReply } from '../../lib/generation/harmony';
import { rawRequest, startServer, type Running } from './server-helpers';

const source = gptOssTemplateSource();
const suite = source ? describe : describe.skip;
useTempTokenizerCache();
const ws = testWorkspace('harmony-serve-');

const LLAMA = {
  architectures: ['LlamaForCausalLM'], model_type: 'llama', tie_word_embeddings: true, vocab_size: 201088, rope_theta: 150000, bos_token_id: 199998,
  eos_token_id: 200002, hidden_size: 16, intermediate_size: 32, num_hidden_layers: 1, num_attention_heads: 2, num_key_value_heads: 1, head_dim: 8,
  max_position_embeddings: 2048, rms_norm_eps: 1e-5,
};
const validate = new Ajv({ strict: false }).compile(ALARM_TOOL.parameters);
// (the template writes every tool's description: it fails on a tool without one, as it does under Python's Jinja)
const TOOLS: OpenAI.ChatCompletionTool[] = BOUNDED_TOOLS.map((t) => ({ type: 'function', function: { description: `Calls ${t.name}`, ...t } }));
const MESSAGES: OpenAI.ChatCompletionMessageParam[] = [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Wake me at seven on Monday.' }];

suite('Harmony (gpt-oss template) through weightmap serve', () => {
  let model: Model;
  let running: Running;
  let client: OpenAI;
  beforeAll(async () => {
    const folder = writeHfFolder(tinyDecoder(LLAMA, 3), ws.fresh('gptoss-tiny'), { 'tokenizer_config.json': JSON.stringify({ ...familyJson('gptoss', 'tokenizer_config.json'), chat_template: source }) });
    fs.symlinkSync(nodePath.join(familyDir('gptoss'), 'tokenizer.json'), nodePath.join(folder, 'tokenizer.json'));
    model = await loadModel(folder, { threads: 1, contextLength: 2048 });
    running = await startServer({ model, modelId: 'tiny' });
    client = running.client();
  }, 120_000);
  afterAll(async () => {
    await running?.stop();
    model?.dispose();
  });

  it('ends a reply at <|return|> or <|call|>, not at <|end|>', () => {
    const stops = model.chatTemplate!.stopTokenTexts.map((t) => model.tokenizer.tokenToId(t));
    expect(stops.sort()).toEqual([200002, 200012]);
  });

  it('a named function: the call validates against its schema, finish_reason tool_calls, whole and streamed alike', async () => {
    const request = { model: 'tiny', messages: MESSAGES, tools: TOOLS, tool_choice: { type: 'function' as const, function: { name: 'set_alarm' } }, temperature: 0, max_tokens: 300 };
    const completion = await client.chat.completions.create(request);
    const choice = completion.choices[0];
    expect(choice.finish_reason).toBe('tool_calls');
    const call = choice.message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect(call.function.name).toBe('set_alarm');
    expect(validate(JSON.parse(call.function.arguments))).toBe(true);

    const stream = await client.chat.completions.create({ ...request, stream: true });
    let args = '';
    let name = '';
    let finish: string | null = null;
    for await (const chunk of stream) {
      for (const d of chunk.choices[0]?.delta.tool_calls ?? []) {
        name += d.function?.name ?? '';
        args += d.function?.arguments ?? '';
      }
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect([name, finish]).toEqual(['set_alarm', 'tool_calls']);
    expect(JSON.parse(args)).toEqual(JSON.parse(call.function.arguments));
  }, 120_000);

  it('the Responses API reads the same channels: a named call is a function_call item that validates, whole and streamed', async () => {
    const tools = BOUNDED_TOOLS.map((t) => ({ type: 'function' as const, name: t.name, description: `Calls ${t.name}`, parameters: t.parameters as Record<string, unknown>, strict: false }));
    const request = { model: 'tiny', input: 'Wake me at seven on Monday.', tools, tool_choice: { type: 'function' as const, name: 'set_alarm' }, temperature: 0, max_output_tokens: 300 };
    const response = await client.responses.create(request);
    const calls = response.output.filter((item) => item.type === 'function_call');
    expect(calls.map((c) => c.name)).toEqual(['set_alarm']);
    expect(validate(JSON.parse(calls[0].arguments))).toBe(true);
    expect(JSON.stringify(response.output)).not.toMatch(/<\|(channel|message|call|constrain)\|>/);
    let streamed = '';
    for await (const event of await client.responses.create({ ...request, stream: true })) {
      if (event.type === 'response.function_call_arguments.done') streamed = event.arguments;
    }
    expect(JSON.parse(streamed)).toEqual(JSON.parse(calls[0].arguments));
  }, 120_000);

  it("tool_choice 'required' with two tools: the model names one under the mask, the rest of the header is fed, the arguments validate against that tool's schema", async () => {
    const validators = new Map(BOUNDED_TOOLS.map((t) => [t.name, new Ajv({ strict: false }).compile(t.parameters)]));
    for (const seed of [1, 2, 3, 4]) {
      const completion = await client.chat.completions.create({ model: 'tiny', messages: MESSAGES, tools: TOOLS, tool_choice: 'required', temperature: 1, seed, max_tokens: 300 });
      const choice = completion.choices[0];
      expect(choice.finish_reason).toBe('tool_calls');
      expect(choice.message.tool_calls).toHaveLength(1);
      const call = (choice.message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall).function;
      expect(validators.get(call.name)?.(JSON.parse(call.arguments))).toBe(true);
    }
  }, 120_000);

  it('a reply without tools: the whole answer and the streamed one agree on content and reasoning (OpenAI and Ollama routes)', async () => {
    const request = { model: 'tiny', messages: MESSAGES, temperature: 0, max_tokens: 40 };
    const whole = (await client.chat.completions.create(request)).choices[0].message as { content: string | null; reasoning_content?: string };
    let content = '';
    let reasoning = '';
    for await (const chunk of await client.chat.completions.create({ ...request, stream: true })) {
      const d = chunk.choices[0]?.delta as { content?: string; reasoning_content?: string } | undefined;
      content += d?.content ?? '';
      reasoning += d?.reasoning_content ?? '';
    }
    expect({ content, reasoning }).toEqual({ content: whole.content ?? '', reasoning: whole.reasoning_content ?? '' });
    const ollama = async (stream: boolean) => {
      const r = await rawRequest(running.origin, '/api/chat', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'tiny', messages: MESSAGES, stream, options: { temperature: 0, num_predict: 40 } }) });
      expect(r.status).toBe(200);
      const lines = stream ? String(r.body).trim().split('\n').map((l) => JSON.parse(l)) : [r.body];
      return { content: lines.map((l) => l.message.content).join(''), reasoning: lines.map((l) => l.message.thinking ?? '').join('') };
    };
    // (Ollama's sampling defaults differ from OpenAI's: its reply is compared with itself)
    expect(await ollama(true)).toEqual(await ollama(false));
  }, 60_000);

  it("tool_choice 'auto': a call the model opens (<|message|> after a to=functions.NAME header, here the prompt's end and pushed by logit bias) has its arguments under that tool's schema", async () => {
    const tools = BOUNDED_TOOLS.map((t) => ({ description: `Calls ${t.name}`, ...t }));
    const messages = [{ role: 'user' as const, content: 'Wake me at seven.' }];
    const auto = await model.chatPrompt(messages, { tools, toolChoice: 'auto', parallelToolCalls: false });
    expect(auto.tools!.constraint).toMatchObject({ open: '<|message|>', forced: false, single: true });
    // The prompt as if the model had written the header itself (the tail the opening is read after starts with it: `lead`).
    const header = '<|channel|>commentary to=functions.set_alarm <|constrain|>json';
    const prompt = { ids: [...auto.ids, ...model.tokenizer.encode(header, { addSpecialTokens: false })], tools: { ...auto.tools!, constraint: { ...auto.tools!.constraint!, lead: header } } };
    for (const seed of [1, 2]) {
      const generation = model.chat(prompt, { temperature: 1, seed, maxTokens: 300, logitBias: { [model.tokenizer.tokenToId('<|message|>')!]: 100 } });
      const text = await generation.text();
      expect(generation.stopReason).toBe('tool-call');
      const { calls } = parseHarmonyReply(text, true, () => 'id');
      expect(calls.map((c) => c.name)).toEqual(['set_alarm']);
      expect(validate(JSON.parse(calls[0].arguments))).toBe(true);
    }
  }, 60_000);

  it('a conversation with an earlier call and its result renders and is answered', async () => {
    const args = '{"hour": 7, "days": ["mon"], "loud": true}';
    const completion = await client.chat.completions.create({
      model: 'tiny', max_tokens: 8, temperature: 0,
      messages: [...MESSAGES, { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'set_alarm', arguments: args } }] }, { role: 'tool', tool_call_id: 'c1', content: 'ok' }],
      reasoning_effort: 'low',
    });
    // The prompt the server fed is the library's rendering of the same turns: the call and its result in it.
    const prompt = await model.chatPrompt(
      [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Wake me at seven on Monday.' },
        { role: 'assistant', content: '', toolCalls: [{ id: 'c1', name: 'set_alarm', arguments: args }] },
        { role: 'tool', content: 'ok', toolCallId: 'c1' },
      ],
      { templateKwargs: { reasoning_effort: 'low' } },
    );
    expect(completion.usage!.prompt_tokens).toBe(prompt.ids.length);
    const rendered = model.tokenizer.decode(prompt.ids);
    expect(rendered).toContain('to=functions.set_alarm');
    expect(rendered).toContain('Reasoning: low');
    expect(['stop', 'length', 'tool_calls']).toContain(completion.choices[0].finish_reason);
  }, 60_000);
});
