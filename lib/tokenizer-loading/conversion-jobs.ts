/**
 * The tokenizer worker's conversion jobs (lib/formats/containers/converted-file.ts): a converted
 * file written from the checkpoint read again, by the readers' own code; nothing but the reply's
 * id crosses back (the JS thread maps the file itself).
 */
import type { ConversionJob } from '../formats/containers/conversion-offload';

export type ConversionRequest = { id: number; op: 'conversion'; job: ConversionJob };
export type ConversionReply = { id: number; written: true };

/** Writes the job's file (safetensors' gpt-oss experts: the only format that converts at read). */
export async function runConversionJob(job: ConversionJob): Promise<void> {
  const { writeConvertedExperts } = require('../formats/containers/safetensors') as typeof import('../formats/containers/safetensors'); // eslint-disable-line @typescript-eslint/no-require-imports
  await writeConvertedExperts(job);
}
