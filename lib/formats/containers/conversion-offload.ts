/**
 * Where the readers' converted files (converted-file.ts) are written: off the JS thread when a
 * runner is registered (lib/tokenizer-loading registers the tokenizer worker's on the main thread;
 * a module of its own, so that registering loads none of the conversion's code).
 */
/** What a conversion's runner is asked: write the file of `conversion` of the checkpoint at `checkpoint` (as the reader was given it) to `file`. */
export interface ConversionJob {
  conversion: string;
  checkpoint: string;
  file: string;
}

/** Writes a job's file ('written'), or says the caller must write it on its own thread ('here'). */
type Runner = (job: ConversionJob) => Promise<'written' | 'here'>;

let runner: Runner | undefined;

/** Registers what writes conversion files off the JS thread (lib/tokenizer-loading, on the main thread), or none. */
export function setConversionRunner(run: Runner | undefined): void {
  runner = run;
}

/** The registered runner, if any. */
export function conversionRunner(): Runner | undefined {
  return runner;
}
