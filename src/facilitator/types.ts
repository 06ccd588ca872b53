/**
 * What the gateway needs from a facilitator, whether it is reached over HTTP
 * (client.ts) or runs in this process (local.ts). The request is exactly the
 * body of POST /verify and POST /settle (src/x402/models.ts): v1 requirement
 * for v1, v2 requirement for v2. `success:false` / `isValid:false` are
 * answers, not exceptions. Unreachable, timed out or malformed answers throw
 * FacilitatorUnavailableError.
 */
import type { FacilitatorRequest, SettleResponse, SupportedResponse, VerifyResponse } from "../x402/models";

export type { FacilitatorRequest, SettleResponse, SupportedResponse, VerifyResponse };

export interface Facilitator {
  verify(request: FacilitatorRequest): Promise<VerifyResponse>;
  settle(request: FacilitatorRequest): Promise<SettleResponse>;
  supported(): Promise<SupportedResponse>;
  /**
   * Its `success` comes from its own receipt check (the built-in facilitator,
   * local.ts): the gateway takes it as the chain's word, no second round trip.
   * Any other facilitator's settlement is confirmed on chain when an RPC is set.
   */
  readonly confirmsOnChain?: boolean;
}

/** The facilitator could not give an answer (down, timed out, 5xx, redirect loop, garbage). */
export class FacilitatorUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "FacilitatorUnavailableError";
  }
}
