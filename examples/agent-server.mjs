// An agent through the official openai client: weightmap's Responses API, a tool call, its result fed back.
// node examples/agent-server.mjs [MODEL]   (chat completions take the same tools: client.chat.completions.create)
import OpenAI from 'openai';
import { createServer, loadModel } from 'weightmap';

const path = process.argv[2] ?? '../shared/fixtures/ajc1-qwen3-tiny/model.bin';
const server = createServer({ model: await loadModel(path, { threads: 2 }), modelId: 'local' });
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const client = new OpenAI({ baseURL: `http://127.0.0.1:${server.address().port}/v1`, apiKey: 'none' });

const city = { type: 'string', pattern: '^[A-Z][a-z]+$', maxLength: 12 };
const tools = [{ type: 'function', name: 'get_weather', parameters: { type: 'object', properties: { city }, required: ['city'] } }];
const getWeather = ({ city }) => ({ city, celsius: 21 });
const input = [{ role: 'user', content: 'Weather in Paris?' }];
// 'required' forces a call (the fixture's random weights would not choose one), under the mask of `parameters`.
const first = await client.responses.create({ model: 'local', input, tools, tool_choice: 'required', max_output_tokens: 48, temperature: 0 });
for (const item of first.output.filter((item) => item.type === 'function_call')) {
  console.log(`called ${item.name}(${item.arguments})`);
  input.push(item, { type: 'function_call_output', call_id: item.call_id, output: JSON.stringify(getWeather(JSON.parse(item.arguments))) });
}
// The call and its result go back; the model answers (or calls again: loop while it does).
const answer = await client.responses.create({ model: 'local', input, tools, max_output_tokens: 16, temperature: 0 });
console.log(`then ${answer.output.map((item) => item.type).join(', ')} (${answer.status}, ${answer.usage.input_tokens} input tokens)`);
await server.drain();
