/**
 * One error shape everywhere: {"error":{"code","message","details"?}}.
 * Services throw ApiError (no HTTP types beyond a status number); this plugin
 * turns every error, ours or Elysia's, into that shape and never leaks a
 * stack trace or an internal message.
 */
import { Elysia, ValidationError } from "elysia";

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

export const badRequest = (message: string, details?: unknown) => new ApiError(400, "invalid_request", message, details);
export const notFound = (message: string) => new ApiError(404, "not_found", message);
export const conflict = (message: string, details?: unknown) => new ApiError(409, "conflict", message, details);

export function errorBody(code: string, message: string, details?: unknown) {
  return { error: details === undefined ? { code, message } : { code, message, details } };
}

export function errorResponse(status: number, code: string, message: string, details?: unknown) {
  return Response.json(errorBody(code, message, details), { status });
}

/** A TypeBox validation error as `[{path, message}]`, with the field path in dotted form. */
function validationDetails(error: ValidationError) {
  const all = error.all ?? [];
  const seen = new Set<string>();
  const details: { path: string; message: string }[] = [];
  for (const e of all as { path?: string; summary?: string; message?: string }[]) {
    const path = (e.path ?? "").replace(/^\//, "").replaceAll("/", ".") || "(body)";
    if (seen.has(path)) continue;
    seen.add(path);
    details.push({ path, message: e.summary ?? e.message ?? "is invalid" });
  }
  return details;
}

export const errors = new Elysia({ name: "errors" })
  .error({ ApiError })
  .onError({ as: "global" }, ({ code, error }) => {
    if (error instanceof ApiError) return errorResponse(error.status, error.code, error.message, error.details);
    switch (code) {
      case "VALIDATION": {
        const v = error as ValidationError;
        const details = validationDetails(v);
        const where = details.map((d) => d.path).join(", ");
        return errorResponse(400, "invalid_request", `invalid ${v.type}: ${where}`, details);
      }
      case "PARSE":
        return errorResponse(400, "invalid_json", "the request body is not valid JSON");
      case "NOT_FOUND":
        return errorResponse(404, "not_found", "no such route");
      case "INVALID_COOKIE_SIGNATURE":
        return errorResponse(400, "invalid_request", "invalid cookie");
    }
    const status = (error as { status?: number })?.status;
    if (typeof status === "number" && status >= 400 && status < 500) {
      return errorResponse(status, "invalid_request", (error as Error).message || "invalid request");
    }
    console.error("unhandled error", error);
    return errorResponse(500, "internal_error", "internal error");
  });
