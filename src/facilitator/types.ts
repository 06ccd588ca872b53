/**
 * What the gateway needs from a facilitator, whether it is reached over HTTP
 * (client.ts) or runs in this process (local.ts). The request is exactly the
 * body of POST /verify and POST /settle: {x402Version, paymentPayload,
 * paymentRequirements} (v1 requirement for v1, v2 requirement for v2).
 * Answers follow the x402 wire shapes; `success:false` / `isValid:false`
 * are answers, not exceptions. Unreachable, timed out or malformed answers
 * throw FacilitatorUnavailableError.
 */
export interface FacilitatorRequest {
  x402Version: 1 | 2;
  paymentPayload: Record<string, unknown>;
  paymentRequirements: Record<string, unknown>;
}

export interface VerifyResponse {
  isValid: boolean;
  invalidReason?: string;
  payer?: string;
}

export interface SettleResponse {
  success: boolean;
  errorReason?: string;
  transaction: string;
  network: string;
  payer?: string;
}

export interface SupportedResponse {
  kinds: { x402Version: number; scheme: string; network: string; extra?: Record<string, unknown> }[];
}

export interface Facilitator {
  verify(request: FacilitatorRequest): Promise<VerifyResponse>;
  settle(request: FacilitatorRequest): Promise<SettleResponse>;
  supported(): Promise<SupportedResponse>;
}

/** The facilitator could not give an answer (down, timed out, 5xx, redirect loop, garbage). */
export class FacilitatorUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "FacilitatorUnavailableError";
  }
}
