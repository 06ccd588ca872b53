/**
 * One error shape everywhere: {"error":{"code","message","details"?}}.
 * Services throw ApiError (no HTTP types beyond a status number); this plugin
 * turns every error, ours or Elysia's, into that shape and never leaks a
 * stack trace or an internal message.
 */
import { Elysia, type ValidationError } from "elysia";

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
    /** Extra response headers, e.g. `WWW-Authenticate` on a 401. */
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

export const badRequest = (message: string, details?: unknown) =>
  new ApiError(400, "invalid_request", message, details);
export const notFound = (message: string) => new ApiError(404, "not_found", message);
export const conflict = (message: string, details?: unknown) => new ApiError(409, "conflict", message, details);

export function errorBody(code: string, message: string, details?: unknown) {
  return { error: details === undefined ? { code, message } : { code, message, details } };
}

export function errorResponse(
  status: number,
  code: string,
  message: string,
  details?: unknown,
  headers?: Record<string, string>,
) {
  return Response.json(errorBody(code, message, details), { status, headers });
}

/**
 * A TypeBox validation error as `[{path, message}]`, the field path in dotted
 * form. A schema's own `error` text wins over TypeBox's generic message.
 */
function validationDetails(error: ValidationError) {
  const all = error.all ?? [];
  const seen = new Set<string>();
  const details: { path: string; message: string }[] = [];
  for (const e of all as {
    path?: string;
    type?: number;
    summary?: string;
    message?: string;
    schema?: { error?: unknown };
  }[]) {
    const path = (e.path ?? "").replace(/^\//, "").replaceAll("/", ".") || `(${error.type})`;
    if (seen.has(path)) continue;
    seen.add(path);
    const custom = e.schema?.error;
    const message =
      e.type === 42 ? "unknown field" : typeof custom === "string" ? custom : (e.summary ?? e.message ?? "is invalid");
    details.push({ path, message });
  }
  return details;
}

/** A 400 for invalid input, naming every offending field. */
export function invalidInput(details: { path: string; message: string }[]) {
  return badRequest(`invalid input: ${details.map((d) => d.path).join(", ")}`, details);
}

function fromApiError(e: ApiError) {
  return errorResponse(e.status, e.code, e.message, e.details, e.headers);
}

export const errors = new Elysia({ name: "errors" })
  .error({ ApiError })
  .onError({ as: "global" }, (ctx) => toErrorResponse(ctx.code, ctx.error));

function toErrorResponse(code: unknown, error: unknown): Response {
  if (error instanceof ApiError) return fromApiError(error);
  switch (code) {
    case "VALIDATION": {
      return fromApiError(invalidInput(validationDetails(error as ValidationError)));
    }
    case "PARSE": {
      // A body parser that throws ApiError (413, 415, bad JSON) is wrapped by Elysia in a ParseError.
      const cause = (error as Error).cause;
      if (cause instanceof ApiError) return fromApiError(cause);
      return errorResponse(400, "invalid_json", "the request body is not valid JSON");
    }
    case "NOT_FOUND":
      return errorResponse(404, "not_found", "no such route");
    case "INVALID_COOKIE_SIGNATURE":
      return errorResponse(400, "invalid_request", "invalid cookie");
  }
  const status = (error as { status?: number })?.status;
  if (typeof status === "number" && status >= 400 && status < 500) {
    return errorResponse(status, "invalid_request", (error as Error).message || "invalid request");
  }
  console.error(`unhandled error: ${describeError(error)}`);
  return errorResponse(500, "internal_error", "internal error");
}

/**
 * An unexpected error as one log line: its name and first message line, never a stack trace. A
 * failed database query (drizzle's "Failed query: <SQL> params: <values>") is named by its cause,
 * the driver's error, instead: its parameters may be a webhook's secret or a payer's proof.
 */
export function describeError(error: unknown): string {
  const e = error as {
    name?: string;
    message?: string;
    cause?: { name?: string; code?: string; errno?: string; message?: string };
  };
  const firstLine = (text: string | undefined) => (text ?? "").split("\n")[0].slice(0, 300);
  if (e?.message?.startsWith("Failed query:")) {
    const c = e.cause;
    return `${e.name ?? "Error"}: database query failed${c ? ` (${c.name ?? "Error"}${c.errno || c.code ? ` ${c.errno ?? c.code}` : ""}: ${firstLine(c.message)})` : ""}`;
  }
  return `${e?.name ?? "Error"}: ${firstLine(e?.message ?? String(error))}`;
}
