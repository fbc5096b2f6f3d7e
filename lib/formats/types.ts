/** The contract of a format module (lib/formats/<format>.ts): one reader and, where the format can hold the model, one writer. */
import type { FormatName, ModelWeights } from '../addon/weights';

/** Options of `readWeights()` and of each format's reader. */
export interface ReadOptions {
  /** sepweight: which parts to map ("f", "b 0-5", "7-12", "75-80 e"); default "f". */
  parts?: string;
  /** Verify checksums where the format has them (EMBD). Default true. */
  verifyChecksums?: boolean;
  /** false: leave vocabulary sidecars unread (ajc1 .tokenizer, llama2.c tokenizer.bin, a sepweight tree's), as when the caller brings its own tokenizer. */
  vocabulary?: boolean;
  /**
   * false: leave tensors the format cannot view in place unconverted (gpt-oss's HF experts), as
   * `weightmap inspect` does: ModelWeights.converted lists them as `pending`, and the weights lack
   * them (no engine runs them). Default true.
   */
  convert?: boolean;
  /**
   * GGUF and ajc1: start mapping the tensors into the process (native prefaultGgufWeights,
   * prefaultWeightSpans) while the rest is read, for an engine about to read them all in place
   * (loadModel). Default false.
   */
  prefaultWeights?: boolean;
}

/** Progress of a write, given to `onProgress` as the bytes go out. */
export interface WriteProgress {
  bytesWritten: number;
  totalBytes: number;
  tensor?: string;
}

/** Options of `writeWeights()` and `convert()` for the writer. */
export interface WriteOptions {
  /** Quantize linear weights on the way out (ajc1 always stores Q8_0). */
  quant?: 'q8_0';
  /** Q8_0 group size; default per format (ajc1: 64, halved until it divides every row). */
  groupSize?: number;
  /** Element type for float tensors where the format offers a choice (sepweight/npy: f32 or f16). */
  dtype?: 'f32' | 'f16';
  /** Called as the output is written (bytes written of the total, the tensor being written). */
  onProgress?: (progress: WriteProgress) => void;
  /** Aborts the write: nothing is left at the destination. */
  signal?: AbortSignal;
  /** Replace files beside the output that belong to another model (config.json, tokenizer files); default: refuse (SidecarConflictError). */
  force?: boolean;
}

/** What detect() gets to look at: the path, whether it is a folder, and the first bytes of a file. */
export interface Probe {
  path: string;
  isDirectory: boolean;
  /** Up to the first 64 bytes of the file (empty for a folder). */
  head: Buffer;
  /** Names of the entries of a folder (empty for a file). */
  entries: string[];
}

/** One format's entry in `FORMATS`: its name, detection, reader and (where it can hold models) writer. */
export interface FormatModule {
  name: FormatName;
  /** Human name, e.g. "ajc1 (qwen3.c)". */
  title: string;
  /** Whether the file or folder is in this format (magic bytes or folder shape). */
  detect(probe: Probe): boolean;
  /** Maps and validates the weights (WeightFormatError for anything the format forbids). */
  read(path: string, options?: ReadOptions): Promise<ModelWeights>;
  /** Writes `weights` as this format; absent for read-only formats. */
  write?(weights: ModelWeights, path: string, options?: WriteOptions): Promise<void>;
  /** The name of the file written into a folder output (`OUT/` or an existing folder); absent: the output is a folder itself. */
  fileName?: string;
  /** false: the format stores no vocabulary (a conversion into it leaves the source's tokenizer behind); absent: it does. */
  holdsVocabulary?: false;
  /** The WriteOptions.quant values (and so groupSize) the writer honours; absent: none. */
  quantTypes?: readonly NonNullable<WriteOptions['quant']>[];
}
