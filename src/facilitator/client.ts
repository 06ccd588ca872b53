/**
 * Any x402 facilitator over HTTP (x402.org, Coinbase CDP, `cidgate
 * facilitator`). Every call is bounded by one deadline that covers
 * redirects and reading the answer; redirects are followed (x402.org sends
 * one to www.) but a loop or a long chain fails. Anything that is not a
 * well-formed answer is FacilitatorUnavailableError: the gateway then
 * answers 500 and releases the proof, it never serves on a guess.
 */
import {
  type Facilitator,
  type FacilitatorRequest,
  FacilitatorUnavailableError,
  type SettleResponse,
  type SupportedResponse,
  type VerifyResponse,
} from "./types";

export interface HttpFacilitatorOptions {
  /** Base URL; `/verify`, `/settle`, `/supported` are appended. */
  url: string;
  /** Bound on each call, redirects included. */
  timeoutMs: number;
  /** Coinbase CDP API key: adds the signed Authorization header it requires. */
  cdp?: { apiKeyId: string; apiKeySecret: string };
  /** For tests that inject a transport fault; defaults to global fetch. */
  fetch?: typeof fetch;
}

const MAX_REDIRECTS = 5;

type Endpoint = "verify" | "settle" | "supported";

/** Creates a Facilitator that speaks the x402 facilitator HTTP API. */
export function createHttpFacilitator(options: HttpFacilitatorOptions): Facilitator {
  const base = options.url.replace(/\/+$/, "");
  const doFetch = options.fetch ?? fetch;

  async function authHeaders(method: string, target: URL): Promise<Record<string, string>> {
    if (!options.cdp) return {};
    // Loaded on demand: the CDP SDK is large and most installs never need it.
    const { createAuthHeader, createCorrelationHeader } = await import("@coinbase/x402");
    try {
      return {
        Authorization: await createAuthHeader(
          options.cdp.apiKeyId,
          options.cdp.apiKeySecret,
          method,
          target.host,
          target.pathname,
        ),
        "Correlation-Context": createCorrelationHeader(),
      };
    } catch (error) {
      // Never echo the key; the SDK's message names the expected format only.
      throw new FacilitatorUnavailableError(
        `CDP auth: cannot sign with CDP_API_KEY_SECRET (${(error as Error)?.message ?? "bad key"})`,
      );
    }
  }

  async function call(endpoint: Endpoint, body?: unknown): Promise<unknown> {
    const method = body === undefined ? "GET" : "POST";
    const signal = AbortSignal.timeout(options.timeoutMs);
    let target = new URL(`${base}/${endpoint}`);
    const seen = new Set<string>();
    try {
      for (let hop = 0; ; hop++) {
        seen.add(target.href);
        const response = await doFetch(target, {
          method,
          headers: {
            Accept: "application/json",
            ...(body === undefined ? {} : { "Content-Type": "application/json" }),
            ...(await authHeaders(method, target)),
          },
          body: body === undefined ? undefined : JSON.stringify(body),
          // Followed by hand: keep POST and its body on every hop, and spot loops.
          redirect: "manual",
          signal,
        });
        if (response.status >= 300 && response.status < 400) {
          const location = response.headers.get("location");
          await response.body?.cancel();
          if (!location) throw new FacilitatorUnavailableError(`facilitator ${endpoint}: redirect without a location`);
          const next = new URL(location, target);
          if (seen.has(next.href)) throw new FacilitatorUnavailableError(`facilitator ${endpoint}: redirect loop`);
          if (hop + 1 >= MAX_REDIRECTS)
            throw new FacilitatorUnavailableError(`facilitator ${endpoint}: more than ${MAX_REDIRECTS} redirects`);
          target = next;
          continue;
        }
        const text = await response.text();
        if (response.status >= 500) {
          throw new FacilitatorUnavailableError(`facilitator ${endpoint}: HTTP ${response.status}`);
        }
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          throw new FacilitatorUnavailableError(
            `facilitator ${endpoint}: HTTP ${response.status} with a body that is not JSON`,
          );
        }
        return { status: response.status, json };
      }
    } catch (error) {
      if (error instanceof FacilitatorUnavailableError) throw error;
      if (signal.aborted)
        throw new FacilitatorUnavailableError(`facilitator ${endpoint}: no answer within ${options.timeoutMs} ms`);
      // The error's code (ConnectionRefused, ECONNRESET...) only: its message may quote the URL, and this text reaches the buyer.
      const code = (error as { code?: unknown })?.code;
      throw new FacilitatorUnavailableError(
        `facilitator ${endpoint}: unreachable (${typeof code === "string" && /^\w{1,40}$/.test(code) ? code : "network error"})`,
      );
    }
  }

  /** The facilitator answered, but not in the shape x402 defines. */
  const malformed = (endpoint: Endpoint, status: number) =>
    new FacilitatorUnavailableError(`facilitator ${endpoint}: HTTP ${status} without a valid x402 answer`);

  return {
    async verify(request: FacilitatorRequest): Promise<VerifyResponse> {
      const { status, json } = (await call("verify", request)) as { status: number; json: Record<string, unknown> };
      // Some facilitators answer an invalid payment with 400 and a normal body: the flag decides.
      if (typeof json?.isValid !== "boolean") throw malformed("verify", status);
      if (json.isValid && status !== 200) throw malformed("verify", status);
      return {
        isValid: json.isValid,
        invalidReason: typeof json.invalidReason === "string" ? json.invalidReason : undefined,
        payer: typeof json.payer === "string" ? json.payer : undefined,
      };
    },
    async settle(request: FacilitatorRequest): Promise<SettleResponse> {
      const { status, json } = (await call("settle", request)) as { status: number; json: Record<string, unknown> };
      if (typeof json?.success !== "boolean") throw malformed("settle", status);
      if (
        json.success &&
        (status !== 200 || typeof json.transaction !== "string" || !/^0x[0-9a-fA-F]{64}$/.test(json.transaction))
      ) {
        throw malformed("settle", status);
      }
      return {
        success: json.success,
        errorReason: typeof json.errorReason === "string" ? json.errorReason : undefined,
        transaction: typeof json.transaction === "string" ? json.transaction : "",
        network: typeof json.network === "string" ? json.network : "",
        payer: typeof json.payer === "string" ? json.payer : undefined,
      };
    },
    async supported(): Promise<SupportedResponse> {
      const { status, json } = (await call("supported")) as { status: number; json: Record<string, unknown> };
      if (status !== 200 || !Array.isArray(json?.kinds)) throw malformed("supported", status);
      return { kinds: json.kinds as SupportedResponse["kinds"] };
    },
  };
}
