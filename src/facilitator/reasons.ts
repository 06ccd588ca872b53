/**
 * x402 reason codes the self-hosted facilitator answers with. The exact-EVM
 * ones are the strings @x402/evm's facilitator uses (its constants are not
 * exported), the rest come from the x402 spec's list. Every invalidReason /
 * errorReason we send is one of these: never a raw RPC or library message,
 * which could carry an RPC URL with its API key.
 */
export const Reason = {
  invalidPayload: "invalid_payload",
  invalidNetwork: "invalid_network",
  unsupportedScheme: "unsupported_scheme",
  networkMismatch: "invalid_exact_evm_network_mismatch",
  missingEip712Domain: "invalid_exact_evm_missing_eip712_domain",
  recipientMismatch: "invalid_exact_evm_recipient_mismatch",
  invalidSignature: "invalid_exact_evm_signature",
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
  /** Submitted, but no receipt within RECEIPT_TIMEOUT_SECONDS; `transaction` names it. */
  settlementPending: "settlement_pending",
  unexpectedVerifyError: "unexpected_verify_error",
  unexpectedSettleError: "unexpected_settle_error",
} as const;

export type ReasonCode = (typeof Reason)[keyof typeof Reason];

/**
 * A reason from a library, kept when it looks like a code (snake_case, as all
 * x402 codes are), else the fallback: a sentence is a raw message, not a code.
 */
export function knownReason(reason: string | undefined, fallback: ReasonCode): string {
  return reason !== undefined && /^[a-z][a-z0-9_]{2,63}$/.test(reason) ? reason : fallback;
}
