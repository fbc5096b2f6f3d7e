// Moondream: encode an image and answer a question about it.
// node examples/vision.mjs [MODEL IMAGE QUESTION]   (MOON weights with config.json and tokenizer.json beside them)
import { readFileSync } from 'node:fs';
import { loadMoondream } from 'weightmap';

const [path = '../shared/fixtures/moon-tiny/model.moon', image, question] = process.argv.slice(2);
const moondream = await loadMoondream(path, { threads: 2 });

if (image && question) {
  // An image file (JPEG, PNG, WebP...: decoded by the optional sharp) and a question in words.
  for await (const piece of moondream.answer(image, question, { maxTokens: 64 })) process.stdout.write(piece.text);
  console.log();
} else {
  // The test fixture: raw RGB pixels at the encoder's size, and no tokenizer, so the question is token ids.
  const pixels = { data: readFileSync('../shared/fixtures/moon-tiny/image.rgb'), width: 56, height: 56, channels: 3 };
  const embeddings = await moondream.encodeImage(pixels); // Float32Array [patches × hidden]
  const reply = moondream.answer(pixels, [366, 166, 174, 34, 461, 495, 419, 196, 203, 402], { maxTokens: 12 });
  await reply.text();
  console.log(`${embeddings.length} embedding values; answer tokens: ${reply.tokens.join(' ')}`);
}
moondream.dispose();
