// An OpenAI-compatible server in a program, asked one chat completion with fetch.
// node examples/serve.mjs [MODEL]
import { createServer, loadModel } from 'weightmap';

const path = process.argv[2] ?? '../shared/fixtures/ajc1-qwen3-tiny/model.bin';
const server = createServer({ model: await loadModel(path, { threads: 2 }), modelId: 'local', apiKey: 'secret' });
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const { port } = server.address();

const response = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
  method: 'POST',
  headers: { authorization: 'Bearer secret', 'content-type': 'application/json' },
  body: JSON.stringify({ model: 'local', messages: [{ role: 'user', content: "What's 12+7? Tell me about café culture in Paris." }], max_tokens: 16, temperature: 0 }),
});
const completion = await response.json();
console.log(response.status, completion.choices[0].finish_reason, JSON.stringify(completion.choices[0].message.content));
await server.drain(); // what SIGTERM does in `weightmap serve`
