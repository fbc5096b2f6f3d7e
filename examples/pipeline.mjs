// One model over two pipeline stages (here in this process; normally `weightmap stage` on other hosts).
// node examples/pipeline.mjs [SEPWEIGHT-TREE]
import { loadModel, StageServer } from 'weightmap';

const tree = process.argv[2] ?? '../shared/fixtures/llama-stories260k/sepweight';
const first = await StageServer.start(tree, { layers: { first: 0, last: 2 }, threads: 1 });
const second = await StageServer.start(tree, { layers: { first: 3, last: 4 }, threads: 1 });

const model = await loadModel(tree, {
  pipeline: [
    { layers: '0-2', address: first.address },
    { layers: '3-4', address: [second.address] }, // replicas of a range, tried in order
  ],
});
console.log(await model.generate('Once upon a time', { maxTokens: 24 }).text());
model.dispose();
await Promise.all([first.drain(), second.drain()]);
