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
