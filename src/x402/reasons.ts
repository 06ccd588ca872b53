/**
 * Every reason code cidgate gives for refusing a payment, one code per
 * failure, whichever side finds it: the gateway's local checks, the
 * built-in facilitator, the ledger. The exact-EVM codes are the strings
 * @x402/evm's facilitator uses (its constants are not exported), the others
 * come from the x402 spec's list, or are ours where x402 has no name
 * (`payment_already_used`, `payment_in_progress`). A reason we send is
 * always one of these: never a raw RPC or library message, which could
 * carry an RPC URL with its API key.
 */
export const Reason = {
  invalidPayload: "invalid_payload",
  invalidNetwork: "invalid_network",
  unsupportedScheme: "unsupported_scheme",
  /** v2: the `accepted` requirement is not one this content offers. */
  noMatchingRequirement: "no_matching_requirement",
  networkMismatch: "invalid_exact_evm_network_mismatch",
  missingEip712Domain: "invalid_exact_evm_missing_eip712_domain",
  recipientMismatch: "invalid_exact_evm_recipient_mismatch",
  signature: "invalid_exact_evm_signature",
  validBefore: "invalid_exact_evm_payload_authorization_valid_before",
  validAfter: "invalid_exact_evm_payload_authorization_valid_after",
  /** v1: value below maxAmountRequired. */
  authorizationValue: "invalid_exact_evm_authorization_value",
  /** v2: value differs from amount. */
  authorizationValueMismatch: "invalid_exact_evm_payload_authorization_value_mismatch",
  assetNotContract: "asset_not_deployed_contract",
  nonceAlreadyUsed: "invalid_exact_evm_nonce_already_used",
  insufficientBalance: "invalid_exact_evm_insufficient_balance",
  tokenNameMismatch: "invalid_exact_evm_token_name_mismatch",
  tokenVersionMismatch: "invalid_exact_evm_token_version_mismatch",
  eip3009NotSupported: "invalid_exact_evm_eip3009_not_supported",
  simulationFailed: "invalid_exact_evm_transaction_simulation_failed",
  transactionFailed: "invalid_exact_evm_transaction_failed",
  transferEventMismatch: "invalid_exact_evm_transfer_event_mismatch",
  factoryNotAllowed: "eip6492_factory_not_allowed",
  /** The same authorization is being settled by another request right now. */
  duplicateSettlement: "duplicate_settlement",
  /** Submitted, but no receipt in time; `transaction` names it. */
  settlementPending: "settlement_pending",
  unexpectedVerifyError: "unexpected_verify_error",
  unexpectedSettleError: "unexpected_settle_error",
  /** This authorization already paid for other content. */
  paymentAlreadyUsed: "payment_already_used",
  /** Another request is settling this authorization, or its settlement is unconfirmed. */
  paymentInProgress: "payment_in_progress",

  /*
   * sign-in-with-x (entitlements/siwx.ts): why a SIGN-IN-WITH-X header was
   * not taken as the buyer's. Ours: the x402 package's own codes
   * (`invalid_siwx_*`) are not exported as constants and differ in scope.
   */
  /** Not base64 JSON of a sign-in-with-x proof, or a field has the wrong form. */
  siwxInvalidHeader: "siwx_invalid_header",
  /** `domain` is not PUBLIC_URL's host: signed for another site. */
  siwxDomainMismatch: "siwx_domain_mismatch",
  /** `uri` is not this resource's URL. */
  siwxUriMismatch: "siwx_uri_mismatch",
  /** A chain or signature type we did not offer. */
  siwxUnsupportedChain: "siwx_unsupported_chain",
  /** `issuedAt` more than 5 minutes ago. */
  siwxIssuedAtTooOld: "siwx_issued_at_too_old",
  /** `issuedAt` later than now (beyond a small clock skew). */
  siwxIssuedAtInFuture: "siwx_issued_at_in_future",
  /** `expirationTime` has passed. */
  siwxExpired: "siwx_expired",
  /** `notBefore` is still ahead. */
  siwxNotYetValid: "siwx_not_yet_valid",
  /** The nonce is not one we issued for this resource. */
  siwxInvalidNonce: "siwx_invalid_nonce",
  /** Our nonce, but issued more than 5 minutes ago. */
  siwxNonceExpired: "siwx_nonce_expired",
  /** This sign-in was accepted once already. */
  siwxNonceReused: "siwx_nonce_reused",
  /** The signature is not the address's. */
  siwxInvalidSignature: "siwx_invalid_signature",
  /** A smart-wallet (EIP-1271/6492) signature and no RPC configured to check it. */
  siwxSmartWalletUnsupported: "siwx_smart_wallet_unsupported",
  /** The check could not be made now (RPC or database): not the signer's fault, try again. */
  siwxUnavailable: "siwx_unavailable",

  /** payment-identifier (x402/payment-identifier.ts): an id that is not 16-128 of [A-Za-z0-9_-]. */
  paymentIdentifierInvalid: "payment_identifier_invalid",
  /** The same payment-identifier came with another payload (the spec's 409). */
  paymentIdentifierConflict: "payment_identifier_conflict",
} as const;

export type ReasonCode = (typeof Reason)[keyof typeof Reason];

/** The amount check's code: v1 pays at least the price, v2 exactly. */
export const valueReason = (x402Version: 1 | 2): ReasonCode =>
  x402Version === 1 ? Reason.authorizationValue : Reason.authorizationValueMismatch;

/**
 * A reason from a library or a remote facilitator, kept when it looks like a
 * code (snake_case, as all x402 codes are), else the fallback: a sentence is
 * a raw message, not a code.
 */
export function knownReason(reason: string | undefined, fallback: ReasonCode): string {
  return reason !== undefined && /^[a-z][a-z0-9_]{2,63}$/.test(reason) ? reason : fallback;
}
