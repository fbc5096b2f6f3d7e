/**
 * Clients no one here wrote, against a weightmap server on the tiny Qwen3 model (random weights) with
 * the real Qwen3 template (issue #25 item 5): Vercel's AI SDK (generateText with a tool and
 * stopWhen, streamText, generateObject with zod) and LangChain.js (ChatOpenAI.bindTools, a tool
 * result fed back, streamed tool-call chunks, withStructuredOutput both ways; and over the Responses
 * API with useResponsesApi). They are ESM; each
 * runs in a child `node` process (test/server/clients/*.mjs), bounded in time, and prints what it
 * saw, checked here against the schemas (ajv) and the flow each client documents.
 */
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { loadToolModel } from '../helpers/tool-model';
import { startServer, type Running } from './server-helpers';

const ALARM = { type: 'object', properties: { hour: { enum: ['6', '7', '8'] }, loud: { type: 'boolean' } }, required: ['hour', 'loud'], additionalProperties: false };
const COLOR = { type: 'object', properties: { color: { enum: ['red', 'green', 'blue'] }, dark: { type: 'boolean' } }, required: ['color', 'dark'], additionalProperties: false };
const ajv = new Ajv({ strict: false });
const validAlarm = ajv.compile(ALARM);
const validColor = ajv.compile(COLOR);
const BOOKING = {
  type: 'object',
  properties: { code: { type: 'string', pattern: '^[A-Z]{3}$' }, day: { type: 'string', format: 'date' }, people: { type: 'integer', minimum: 1, maximum: 9 }, contact: { type: 'string', format: 'email', maxLength: 24 } },
  required: ['code', 'day', 'people'],
  additionalProperties: false,
};
const validBooking = addFormats(new Ajv({ strict: false })).compile(BOOKING);

let cleanup: () => void;
let running: Running;

beforeAll(async () => {
  const loaded = await loadToolModel();
  cleanup = loaded.cleanup;
  running = await startServer({ model: loaded.model, modelId: 'tiny', apiKey: 'none' });
});
afterAll(async () => {
  await running.stop();
  cleanup();
});

/** Runs a client script; resolves to the JSON it printed. */
function runClient(script: string): Promise<any> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [path.join(__dirname, 'clients', script)], { env: { ...process.env, BASE_URL: `${running.origin}/v1` }, timeout: 240_000 }, (error, stdout, stderr) => {
      if (error) return reject(new Error(`${script}: ${error.message}\n${stderr}`));
      resolve(JSON.parse(stdout.trim().split('\n').pop()!));
    });
  });
}

describe("Vercel's AI SDK", () => {
  it('generateText with a tool and stopWhen, streamText, generateObject with zod', async () => {
    const out = await runClient('ai-sdk.mjs');
    // Two steps, each a forced call; execute ran for each with input that validates; its result came back as the step's tool result.
    expect(out.generateText.steps).toBe(2);
    expect(out.generateText.executed).toHaveLength(2);
    for (const input of out.generateText.executed) expect(validAlarm(input)).toBe(true);
    expect(out.generateText.stepToolCalls.map((calls: unknown[]) => calls.length)).toEqual([1, 1]);
    expect(out.generateText.stepToolResults).toEqual([[{ ok: true }], [{ ok: true }]]);
    expect(out.generateText.finishReasons).toEqual(['tool-calls', 'tool-calls']);
    const streamCall = out.streamText.find((p: any) => p.type === 'tool-call');
    expect(streamCall.toolName).toBe('set_alarm');
    expect(validAlarm(streamCall.input)).toBe(true);
    expect(out.streamText[out.streamText.length - 1]).toEqual({ type: 'finish', finishReason: 'tool-calls' });
    expect(out.streamText.some((p: any) => p.type === 'error')).toBe(false);
    expect(out.streamPlain.outputTokens).toBeGreaterThan(0);
    expect(out.streamPlain.finishReason).toMatch(/^(stop|length)$/);
    expect(validColor(out.generateObject)).toBe(true);
    // The SDK parsed it with zod already; judged again by ajv + ajv-formats against the schema written out here.
    expect(validBooking(out.generateObjectFormats)).toBe(true);
  }, 300_000);
});

describe('LangChain.js', () => {
  it('bindTools, a tool result fed back, streamed tool-call chunks, withStructuredOutput (jsonSchema and functionCalling); the same over the Responses API', async () => {
    const out = await runClient('langchain.mjs');
    expect(out.bindTools.toolCalls).toHaveLength(1);
    expect(out.bindTools.toolCalls[0]).toMatchObject({ name: 'set_alarm', hasId: true });
    expect(validAlarm(out.bindTools.toolCalls[0].args)).toBe(true);
    expect(out.toolMessage).toBe(true);
    expect(out.afterResult.type).toBe('ai');
    expect(out.streamedToolCalls).toHaveLength(1);
    expect(validAlarm(out.streamedToolCalls[0].args)).toBe(true);
    expect(validColor(out.structuredJsonSchema)).toBe(true);
    expect(validColor(out.structuredFunctionCalling)).toBe(true);
    // Over the Responses API (useResponsesApi): the same forced call, the result fed back as a function_call_output, streamed calls, structured output.
    expect(out.responses.toolCalls).toHaveLength(1);
    expect(out.responses.toolCalls[0]).toMatchObject({ name: 'set_alarm', hasId: true });
    expect(validAlarm(out.responses.toolCalls[0].args)).toBe(true);
    expect(out.responses.afterResult).toBe('ai');
    expect(out.responses.streamedToolCalls).toHaveLength(1);
    expect(validAlarm(out.responses.streamedToolCalls[0].args)).toBe(true);
    expect(validColor(out.responses.structured)).toBe(true);
  }, 300_000);
});
