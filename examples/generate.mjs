// Stream a continuation of a prompt, then read how it ended.
// node examples/generate.mjs [MODEL] [PROMPT]
import { loadModel } from 'weightmap';

const path = process.argv[2] ?? '../shared/fixtures/llama-stories260k/stories260K.bin';
const prompt = process.argv[3] ?? 'Once upon a time';

const model = await loadModel(path, { threads: 2 }); // tok512.bin beside the weights is found
const generation = model.generate(prompt, { maxTokens: 48, signal: AbortSignal.timeout(30_000) });
for await (const piece of generation) process.stdout.write(piece.text); // greedy: temperature 0 is the default
console.log(`\n[${generation.tokens.length} tokens, ${generation.stopReason}]`);

const sampled = await model.generate(prompt, { maxTokens: 24, temperature: 0.8, topP: 0.9, seed: 1 }).text();
console.log(sampled);
model.dispose();
