// An agent: the model calls a tool, the handler's result goes back, the model answers.
// node examples/agent.mjs [MODEL]   (a model with a chat template; tool calls follow its family's format)
import { loadModel } from 'weightmap';

const path = process.argv[2] ?? '../shared/fixtures/ajc1-qwen3-tiny/model.bin';
const model = await loadModel(path, { threads: 2 });

const tools = [
  {
    name: 'get_weather',
    description: 'The current weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string', pattern: '^[A-Z][a-z]+$', maxLength: 12 } }, required: ['city'] },
    handler: async ({ city }) => ({ city, celsius: 21 }),
  },
];
// 'required' forces one call (the fixture's random weights would not choose one); its arguments
// are generated under the JSON-schema mask of `parameters` (the pattern and the length included),
// so they always parse and validate.
const result = await model.chatWithTools([{ role: 'user', content: 'Weather in Paris?' }], {
  tools,
  toolChoice: 'required',
  maxTokens: 48,
  enableThinking: false,
});
const [call] = result.messages[0].toolCalls;
console.log(`called ${call.name}(${call.arguments})`);
console.log(`tool said ${result.messages[1].content}`);
console.log(`[${result.rounds} round, then ${result.stopReason}]`);
model.dispose();
