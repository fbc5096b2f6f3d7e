// LangChain.js (`@langchain/openai` ChatOpenAI) against a weightmap server (run by
// test/server/agent-clients.test.ts: BASE_URL in the environment), over chat completions and over the
// Responses API (useResponsesApi). Prints one JSON line of what it saw.
import { ChatOpenAI } from '@langchain/openai';
import { HumanMessage, ToolMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { z } from 'zod';

const llm = new ChatOpenAI({ model: 'tiny', apiKey: 'none', configuration: { baseURL: process.env.BASE_URL }, temperature: 0, maxTokens: 200, maxRetries: 0 });
const setAlarm = tool(async (input) => JSON.stringify({ ok: true, hour: input.hour }), {
  name: 'set_alarm',
  description: 'Sets an alarm',
  schema: z.object({ hour: z.enum(['6', '7', '8']), loud: z.boolean() }),
});

const out = {};
// bindTools with a forced call; the call run by the tool and fed back as a ToolMessage.
const withTools = llm.bindTools([setAlarm], { tool_choice: 'required' });
const question = new HumanMessage('Wake me at seven.');
const ai = await withTools.invoke([question]);
out.bindTools = { toolCalls: ai.tool_calls.map((c) => ({ name: c.name, args: c.args, hasId: typeof c.id === 'string' })) };
const result = await setAlarm.invoke(ai.tool_calls[0]);
out.toolMessage = result instanceof ToolMessage;
const next = await llm.bindTools([setAlarm]).invoke([question, ai, result]);
out.afterResult = { type: next._getType(), contentType: typeof next.content };

// streamed tool-call chunks, concatenated by LangChain.
let gathered;
for await (const chunk of await withTools.stream([question])) gathered = gathered === undefined ? chunk : gathered.concat(chunk);
out.streamedToolCalls = gathered.tool_calls.map((c) => ({ name: c.name, args: c.args }));

// withStructuredOutput (zod), both ways LangChain asks for it.
const Color = z.object({ color: z.enum(['red', 'green', 'blue']), dark: z.boolean() });
out.structuredJsonSchema = await llm.withStructuredOutput(Color, { method: 'jsonSchema', name: 'color' }).invoke('A color?');
out.structuredFunctionCalling = await llm.withStructuredOutput(Color, { method: 'functionCalling', name: 'color' }).invoke('A color?');

// The same flows over the Responses API (ChatOpenAI's useResponsesApi: POST /v1/responses).
const responsesLlm = new ChatOpenAI({ model: 'tiny', apiKey: 'none', configuration: { baseURL: process.env.BASE_URL }, temperature: 0, maxTokens: 200, maxRetries: 0, useResponsesApi: true });
// A named tool forces the call (LangChain's Responses mapping sends no tool_choice for 'required').
const viaResponses = responsesLlm.bindTools([setAlarm], { tool_choice: 'set_alarm' });
const aiResponses = await viaResponses.invoke([question]);
const resultResponses = await setAlarm.invoke(aiResponses.tool_calls[0]);
const nextResponses = await responsesLlm.bindTools([setAlarm]).invoke([question, aiResponses, resultResponses]);
let gatheredResponses;
for await (const chunk of await viaResponses.stream([question])) gatheredResponses = gatheredResponses === undefined ? chunk : gatheredResponses.concat(chunk);
out.responses = {
  toolCalls: aiResponses.tool_calls.map((c) => ({ name: c.name, args: c.args, hasId: typeof c.id === 'string' })),
  afterResult: next._getType() === nextResponses._getType() ? nextResponses._getType() : `differs: ${nextResponses._getType()}`,
  streamedToolCalls: gatheredResponses.tool_calls.map((c) => ({ name: c.name, args: c.args })),
  structured: await responsesLlm.withStructuredOutput(Color, { method: 'jsonSchema', name: 'color' }).invoke('A color?'),
};

console.log(JSON.stringify(out));
