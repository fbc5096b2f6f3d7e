/**
 * The tokenizer worker's vocabulary jobs (lib/formats/vocabulary/vocab-offload.ts): the weights at the job's
 * path read again, their vocabulary converted by the writers' own code, and only bytes sent back,
 * their buffers transferred.
 */
import type { EncodedGgufVocabulary, VocabularyJob, VocabularyResult } from '../formats/vocabulary/vocab-offload';

export type VocabularyRequest = { id: number; op: 'vocabulary'; job: VocabularyJob };
export type VocabularyReply = { id: number; vocabulary: VocabularyResult };

/** The job's result and the buffers to transfer with it. */
export async function runVocabularyJob(job: VocabularyJob): Promise<{ result: VocabularyResult; transfer: ArrayBuffer[] }> {
  /* eslint-disable @typescript-eslint/no-require-imports */
  const { readWeights } = require('../formats') as typeof import('../formats');
  const { closeWeights } = require('../addon/weights') as typeof import('../addon/weights');
  /* eslint-enable @typescript-eslint/no-require-imports */
  const weights = await readWeights(job.path, { format: job.format });
  try {
    if (job.target === 'gguf') {
      const { encodeGgufVocabulary } = require('../formats/writing/gguf-writer') as typeof import('../formats/writing/gguf-writer'); // eslint-disable-line @typescript-eslint/no-require-imports
      const { ggufVocabulary } = require('../formats/vocabulary/vocab-convert') as typeof import('../formats/vocabulary/vocab-convert'); // eslint-disable-line @typescript-eslint/no-require-imports
      const t = await ggufVocabulary(weights, job.vocabSize);
      if (!t) return { result: undefined, transfer: [] };
      // Typed arrays copied: a reader's may view the mapping, which is closed below.
      const gguf: EncodedGgufVocabulary = { ...encodeGgufVocabulary(t), scores: t.scores?.slice(), tokenTypes: t.tokenTypes?.slice() };
      if (!gguf.scores) delete gguf.scores;
      if (!gguf.tokenTypes) delete gguf.tokenTypes;
      gguf.tokens.payload = own(gguf.tokens.payload);
      if (gguf.merges) gguf.merges.payload = own(gguf.merges.payload);
      const transfer = [gguf.tokens.payload.buffer as ArrayBuffer, ...(gguf.merges ? [gguf.merges.payload.buffer as ArrayBuffer] : [])];
      return { result: { gguf }, transfer };
    }
    if (job.target === 'tokenizer.json') {
      const { hfSentencePieceFilesHere } = require('../formats/vocabulary/vocab-convert') as typeof import('../formats/vocabulary/vocab-convert'); // eslint-disable-line @typescript-eslint/no-require-imports
      const made = await hfSentencePieceFilesHere(weights, job.maxSeqLen);
      if (!made) return { result: undefined, transfer: [] };
      const files = made.map(([name, text]): [string, Uint8Array] => [name, own(Buffer.from(text, 'utf8'))]);
      return { result: { files }, transfer: files.map(([, bytes]) => bytes.buffer as ArrayBuffer) };
    }
    const { ajc1TokenizerHere } = require('../formats/containers/ajc1') as typeof import('../formats/containers/ajc1'); // eslint-disable-line @typescript-eslint/no-require-imports
    const made = await ajc1TokenizerHere(weights, job.vocabSize, job.bos, job.eos);
    if (!made) return { result: undefined, transfer: [] };
    const bytes = own(made.bytes);
    return { result: { ajc1: { bytes, entries: made.entries } }, transfer: [bytes.buffer as ArrayBuffer] };
  } finally {
    closeWeights(weights);
  }
}

/** The bytes in an ArrayBuffer of their own (a Buffer may be a slice of a shared pool, which cannot be transferred). */
function own(bytes: Uint8Array): Uint8Array {
  if (bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer) return bytes;
  return new Uint8Array(bytes);
}
