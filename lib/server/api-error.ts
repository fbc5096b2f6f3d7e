/**
 * Errors as OpenAI's API sends them: an HTTP status and the body
 * { error: { message, type, param, code } }.
 */
import { AbortError, ConstraintError, DisposedError, UnsupportedError } from '../base/errors';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly type: string,
    readonly param: string | null = null,
    readonly code: string | null = null,
    /** Extra response headers (Retry-After, WWW-Authenticate). */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'ApiError';
  }

  get body(): { error: { message: string; type: string; param: string | null; code: string | null } } {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

export function invalidRequest(message: string, param: string | null = null, code: string | null = null): ApiError {
  return new ApiError(400, message, 'invalid_request_error', param, code);
}

/**
 * The ApiError for anything a request handler throws: ApiErrors as they are; the library's
 * argument errors (TypeError, RangeError, UnsupportedError) are the request's fault (400) with
 * `param` naming the field that carried the value; so is a ConstraintError (a schema past its
 * bounds, constraints that leave no token: its code in `code`) but for a rejected token; the rest is the server's (500,
 * message hidden).
 */
export function toApiError(error: unknown, param: string | null = null): ApiError {
  if (error instanceof ApiError) return error;
  if (error instanceof ConstraintError) {
    // A drawn token the constraint rejects is the server's failure; the other codes are the request's.
    if (error.code === 'TOKEN_REJECTED') return new ApiError(500, 'internal server error', 'server_error', null, 'token_rejected');
    return invalidRequest(error.message, param, error.code.toLowerCase());
  }
  if (error instanceof UnsupportedError || error instanceof TypeError || error instanceof RangeError) {
    return invalidRequest(error.message, param);
  }
  if (error instanceof DisposedError) return new ApiError(503, 'the model is unloading', 'server_error', null, 'model_unavailable');
  if (error instanceof AbortError) return new ApiError(499, 'the request was aborted', 'invalid_request_error', null, 'aborted');
  return new ApiError(500, 'internal server error', 'server_error');
}
