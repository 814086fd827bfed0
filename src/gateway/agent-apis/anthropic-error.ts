import type { ErrorResponse, ErrorType } from '@anthropic-ai/sdk/resources/shared';

// The API documents `request_too_large` for 413; this SDK version's ErrorType union does not list it yet.
type AnthropicErrorType = ErrorType | 'request_too_large';
export type AnthropicErrorBody = Omit<ErrorResponse, 'error'> & {
  error: { type: AnthropicErrorType; message: string };
};

/** Anthropic's error type for a status (its SDKs pick the exception class by status). */
export function anthropicErrorType(status: number): AnthropicErrorType {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 413) return 'request_too_large';
  if (status === 429) return 'rate_limit_error';
  if (status === 529) return 'overloaded_error';
  if (status >= 500) return 'api_error';
  return 'invalid_request_error';
}

/** An error in the Messages API's own shape: `{"type":"error","error":{"type","message"}}`. */
export function anthropicErrorBody(status: number, message: string): AnthropicErrorBody {
  return { type: 'error', error: { type: anthropicErrorType(status), message }, request_id: null };
}

/** Paths whose errors leave in the Anthropic shape (the Messages API and its count_tokens). */
export function speaksAnthropic(url: string): boolean {
  return /^\/r\/[^/?]*\/v1\/messages(?:[/?]|$)/.test(url);
}
