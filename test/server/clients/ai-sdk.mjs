// Vercel's AI SDK (`ai` + `@ai-sdk/openai-compatible`) against a weightmap server (run by
// test/server/agent-clients.test.ts: BASE_URL in the environment). Prints one JSON line of what it saw.
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateObject, generateText, stepCountIs, streamText, tool } from 'ai';
import { z } from 'zod';

const provider = createOpenAICompatible({ name: 'weightmap', baseURL: process.env.BASE_URL, apiKey: 'none', supportsStructuredOutputs: true, includeUsage: true });
const model = provider.chatModel('tiny');
const alarm = z.object({ hour: z.enum(['6', '7', '8']), loud: z.boolean() });
const executed = [];

const out = {};
// generateText with a tool and stopWhen: a forced call, run by execute, its result fed back in step 2.
const text = await generateText({
  model,
  prompt: 'Wake me at seven.',
  tools: { set_alarm: tool({ description: 'Sets an alarm', inputSchema: alarm, execute: async (input) => (executed.push(input), { ok: true }) }) },
  toolChoice: 'required',
  stopWhen: stepCountIs(2),
  maxOutputTokens: 200,
  temperature: 0,
});
out.generateText = {
  steps: text.steps.length,
  executed,
  stepToolCalls: text.steps.map((s) => s.toolCalls.map((c) => ({ toolName: c.toolName, input: c.input }))),
  stepToolResults: text.steps.map((s) => s.toolResults.map((r) => r.output)),
  finishReasons: text.steps.map((s) => s.finishReason),
};

// streamText with a forced tool call: the SDK assembles it from the streamed deltas.
const streamed = streamText({ model, prompt: 'Wake me at seven.', tools: { set_alarm: tool({ inputSchema: alarm }) }, toolChoice: 'required', maxOutputTokens: 200, temperature: 0 });
const parts = [];
for await (const part of streamed.fullStream) if (part.type === 'tool-call' || part.type === 'finish' || part.type === 'error') parts.push(part.type === 'tool-call' ? { type: part.type, toolName: part.toolName, input: part.input } : { type: part.type, ...(part.type === 'finish' ? { finishReason: part.finishReason } : { error: String(part.error) }) });
out.streamText = parts;

// streamText of plain text.
const plain = streamText({ model, prompt: 'Say hi.', maxOutputTokens: 6, temperature: 0 });
let chunks = 0;
for await (const piece of plain.textStream) chunks += piece ? 1 : 0;
out.streamPlain = { chunks, finishReason: await plain.finishReason, outputTokens: (await plain.usage).outputTokens };

// generateObject with a zod schema: response_format json_schema, the object validated by the SDK against the schema.
const object = await generateObject({ model, schema: z.object({ color: z.enum(['red', 'green', 'blue']), dark: z.boolean() }), prompt: 'A color?', maxOutputTokens: 100, temperature: 0 });
out.generateObject = object.object;
// generateObject with zod's string formats, a pattern and a range (z.toJSONSchema sends format and pattern together).
const booking = await generateObject({
  model,
  schema: z.object({ code: z.string().regex(/^[A-Z]{3}$/), day: z.iso.date(), people: z.number().int().min(1).max(9), contact: z.email().max(24).optional() }),
  prompt: 'Book a table.',
  maxOutputTokens: 120,
  temperature: 0,
});
out.generateObjectFormats = booking.object;

console.log(JSON.stringify(out));
