/**
 * The error family of weightmap. Every failure a caller can act on is one of these classes
 * with a stable `code`; Node's own argument errors (TypeError, RangeError) cover misuse.
 */

/** Stable codes of WeightFormatError. */
export type WeightFormatErrorCode =
  | 'BAD_MAGIC' // the file does not start with the format's magic bytes
  | 'BAD_VERSION' // a version this reader does not know
  | 'BAD_HEADER' // a header or metadata field that cannot be parsed
  | 'TRUNCATED' // the file ends before a structure it promises
  | 'TRAILING_DATA' // bytes after the last structure where the format allows none
  | 'SHAPE_MISMATCH' // a tensor's dimensions disagree with the configuration
  | 'OUT_OF_BOUNDS' // an offset or size points outside the file or its section
  | 'OVERLAP' // two tensors share bytes
  | 'CHECKSUM_MISMATCH' // a stored CRC does not match the bytes
  | 'CONFIG_MISMATCH' // configuration values that contradict each other or are out of range
  | 'BAD_NAME' // a tensor or key name that is too long, empty, duplicated, not UTF-8 or unknown
  | 'BAD_DTYPE' // an unknown dtype code or one the tensor cannot have
  | 'MISSING_TENSOR' // a tensor the architecture needs is absent
  | 'UNSUPPORTED'; // valid in the format but not handled (a flag, a quantization type)

/** Where in a file a WeightFormatError was found, and what was expected there. */
export interface WeightFormatErrorDetails {
  path?: string;
  offset?: number;
  expected?: unknown;
  found?: unknown;
  cause?: unknown;
}

function describe(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'bigint') return `${value}`;
  try {
    return JSON.stringify(value);
  } catch {
    return String(value);
  }
}

/** A malformed, truncated, hostile or unsupported weight file. Never thrown for misuse. */
export class WeightFormatError extends Error {
  readonly code: WeightFormatErrorCode;
  /** The file (or folder) being read. */
  readonly path: string | undefined;
  /** Byte offset in `path` where the problem was found, when one applies. */
  readonly offset: number | undefined;
  readonly expected: unknown;
  readonly found: unknown;

  constructor(code: WeightFormatErrorCode, message: string, details: WeightFormatErrorDetails = {}) {
    const where: string[] = [];
    if (details.path !== undefined) where.push(details.path);
    if (details.offset !== undefined) where.push(`byte ${details.offset}`);
    const wanted = [
      details.expected !== undefined ? `expected ${describe(details.expected)}` : undefined,
      details.found !== undefined ? `found ${describe(details.found)}` : undefined,
    ].filter((part) => part !== undefined);
    super(`${code}: ${message}${wanted.length ? ` (${wanted.join(', ')})` : ''}${where.length ? ` [${where.join(' @ ')}]` : ''}`, {
      cause: details.cause,
    });
    this.name = 'WeightFormatError';
    this.code = code;
    this.path = details.path;
    this.offset = details.offset;
    this.expected = details.expected;
    this.found = details.found;
  }
}

/** A valid request that this build cannot serve (an architecture, dtype or ISA it lacks). */
export class UnsupportedError extends Error {
  readonly code = 'ERR_WEIGHTMAP_UNSUPPORTED';
  constructor(message: string) {
    super(message);
    this.name = 'UnsupportedError';
  }
}

/** An operation stopped by its AbortSignal. Same name and code as the DOM/Node AbortError. */
export class AbortError extends Error {
  readonly code = 'ABORT_ERR';
  constructor(message = 'The operation was aborted', options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'AbortError';
  }
}

/** A method called on an object after its dispose(). */
export class DisposedError extends Error {
  readonly code = 'ERR_WEIGHTMAP_DISPOSED';
  constructor(what: string) {
    super(`${what} was disposed`);
    this.name = 'DisposedError';
  }
}

/** Stable codes of PipelineError. */
export type PipelineErrorCode =
  | 'ERR_WEIGHTMAP_STAGE_UNAVAILABLE' // no replica of a layer range answers (died, missed its deadline, unreachable)
  | 'ERR_WEIGHTMAP_STAGE_MISMATCH' // a stage serves another model, other layers or another schema version
  | 'ERR_WEIGHTMAP_STAGE_REJECTED' // a stage refused a request (bad credentials, malformed tensor) or sent a malformed reply
  | 'ERR_WEIGHTMAP_PIPELINE_CONFIG'; // the stages' layers do not cover the model exactly once, or a remote stage has no TLS

/** A model split over pipeline stages (lib/pipeline) that cannot run: see `code`. */
export class PipelineError extends Error {
  readonly code: PipelineErrorCode;
  /** The stage's layers ("0-13") and address, when one is to blame. */
  readonly layers: string | undefined;
  readonly address: string | undefined;

  constructor(code: PipelineErrorCode, message: string, details: { layers?: string; address?: string; cause?: unknown } = {}) {
    const where = [details.layers && `layers ${details.layers}`, details.address].filter(Boolean).join(' @ ');
    super(`${code}: ${message}${where ? ` [${where}]` : ''}`, { cause: details.cause });
    this.name = 'PipelineError';
    this.code = code;
    this.layers = details.layers;
    this.address = details.address;
  }
}

/** A write whose destination would replace (or hold) a file it reads. */
export class OutputIsInputError extends Error {
  readonly code = 'ERR_WEIGHTMAP_OUTPUT_IS_INPUT';
  constructor(
    /** The destination asked for. */
    readonly output: string,
    /** The input file it resolves to (same real path, or the same device and inode). */
    readonly input: string,
  ) {
    super(`the output ${output} would replace ${input}, which this conversion reads; write to another path`);
    this.name = 'OutputIsInputError';
  }
}

/** A write whose sidecar (config.json, a tokenizer file) would replace one that belongs to another model. */
export class SidecarConflictError extends Error {
  readonly code = 'ERR_WEIGHTMAP_SIDECAR_CONFLICT';
  constructor(
    /** The weight file being written. */
    readonly output: string,
    /** The existing file it would replace. */
    readonly sidecar: string,
    /** The other weight file in that folder, when one is there. */
    readonly owner: string | undefined,
  ) {
    super(
      `writing ${output} would replace ${sidecar}, which belongs to ${owner ?? 'another model'}; ` +
        'write to another folder, or force the replacement (--force, { force: true })',
    );
    this.name = 'SidecarConflictError';
  }
}

/**
 * A value outside what a call accepts: a RangeError with Node's code ERR_OUT_OF_RANGE. Every
 * RangeError weightmap throws is made here.
 */
export function rangeError(message: string, options?: { cause?: unknown }): RangeError & { code: 'ERR_OUT_OF_RANGE' } {
  const error = new RangeError(message, options) as RangeError & { code: 'ERR_OUT_OF_RANGE' };
  error.code = 'ERR_OUT_OF_RANGE';
  return error;
}

/** Text given to a model that has no vocabulary (a MOON file alone): only token ids can be used (a TypeError: the prompt has the wrong kind). */
export class NoTokenizerError extends TypeError {
  readonly code = 'ERR_WEIGHTMAP_NO_TOKENIZER';
  constructor(readonly path: string) {
    super(`${path} has no tokenizer in or beside it: give token ids, or load it with { tokenizer: PATH }`);
    this.name = 'NoTokenizerError';
  }
}

/** Stable codes of ConstraintError. */
export type ConstraintErrorCode =
  | 'SCHEMA_TOO_LARGE' // the schema's grammar would pass a size bound (`bound` names it)
  | 'SCHEMA_TOO_DEEP' // its values nest deeper than the automaton allows (`bound`: maxDepth)
  | 'NO_ALLOWED_TOKEN' // the constraint and the logit bias leave no token to draw
  | 'TOKEN_REJECTED'; // a token the constraint does not allow reached it

/** Constrained output (a JSON schema, a logit bias) that cannot be compiled within its bounds or leaves nothing to generate. */
export class ConstraintError extends Error {
  readonly code: ConstraintErrorCode;
  /** The bound that was passed (lib/constrain/limits.ts SCHEMA_LIMITS), for the SCHEMA_* codes. */
  readonly bound: string | undefined;

  constructor(code: ConstraintErrorCode, message: string, bound?: string) {
    super(message);
    this.name = 'ConstraintError';
    this.code = code;
    this.bound = bound;
  }
}
