// Chat through the model's own template, one-shot and as a session that keeps its KV cache.
// node examples/chat.mjs [MODEL]   (a model with a chat template: ajc1 .template, GGUF, tokenizer_config.json)
import { loadModel } from 'weightmap';

const path = process.argv[2] ?? '../shared/fixtures/ajc1-qwen3-tiny/model.bin';
const model = await loadModel(path, { threads: 2 });

const messages = [{ role: 'user', content: "What's 12+7? Tell me about café culture in Paris." }];
const reply = model.chat(messages, { maxTokens: 32, enableThinking: false });
for await (const piece of reply) process.stdout.write(piece.text);
console.log(`\n[${reply.stopReason}]`);

const session = model.createChatSession({ systemPrompt: 'Be brief.' });
await session.prompt('Hi!', { maxTokens: 8, onTextChunk: (text) => process.stdout.write(text) });
await session.prompt('And then?', { maxTokens: 8 }); // only the new turn is fed
console.log(`\n[${session.messages.length} messages]`);
model.dispose();
