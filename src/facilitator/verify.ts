/**
 * Verify for scheme `exact` on EVM, v1 and v2.
 *
 * The heavy lifting is @x402/evm's own facilitator code (ExactEvmScheme for
 * v2, ExactEvmSchemeV1 for v1): EIP-712 digest from the requirement's
 * `extra`, signature (EOA, ERC-1271, ERC-6492), recipient, time window,
 * amount, and an eth_call simulation of transferWithAuthorization whose
 * failure is diagnosed (balance, token name/version, nonce). Around it, what
 * it lacks, all decided before or beside its calls:
 *
 * - the request shape (model.ts), and both networks canonicalised
 *   (`base-sepolia` and `eip155:84532` are the same network);
 * - the network is one this facilitator serves and the RPC's chain id is that
 *   network's (v1 takes the chain id from the name and never asks the chain);
 * - v1 accepts value >= maxAmountRequired (the v1 spec), v2 exactly `amount`;
 * - the nonce is read with authorizationState at verify, not only discovered
 *   when a settlement reverts;
 * - the asset has code, for v1 too (a call to an empty address "succeeds");
 * - answers carry reason codes only; an RPC that does not answer is
 *   FacilitatorUnavailableError (the gateway's 500), not an invalid payment.
 */

import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import { eip3009ABI, type FacilitatorEvmSigner, validateAssetIsContract } from "@x402/evm";
import { ExactEvmScheme } from "@x402/evm/exact/facilitator";
import { ExactEvmSchemeV1 } from "@x402/evm/exact/v1/facilitator";
import { BaseError, ContractFunctionRevertedError, ContractFunctionZeroDataError, getAddress } from "viem";
import { canonicalNetwork, NETWORKS, type NetworkName } from "../chain/networks";
import type { FacilitatorRequest } from "../x402/models";
import { knownReason, Reason } from "../x402/reasons";
import { FacilitatorUnavailableError, type VerifyResponse } from "./types";

export interface VerifierDeps {
  /** Networks this facilitator settles on (canonical names). */
  networks: readonly NetworkName[];
  /** Chain id and signer of the RPC; throws FacilitatorUnavailableError when it cannot be reached. */
  chain(): Promise<{ chainId: number; signer: FacilitatorEvmSigner }>;
}

/** What verify learnt that settle needs: the payment in canonical form. */
export interface VerifiedPayment {
  network: NetworkName;
  chainId: number;
  asset: `0x${string}`;
  payer: `0x${string}`;
  to: `0x${string}`;
  value: bigint;
  validAfter: bigint;
  validBefore: bigint;
  nonce: `0x${string}`;
  signature: `0x${string}`;
}

export type VerifyOutcome = { response: VerifyResponse; payment?: VerifiedPayment };

function invalid(invalidReason: string, payer?: string): VerifyOutcome {
  return { response: { isValid: false, invalidReason, payer } };
}

/** authorizationState(from, nonce): true when used or cancelled. */
async function nonceUsed(signer: FacilitatorEvmSigner, asset: `0x${string}`, from: string, nonce: string) {
  try {
    return (await signer.readContract({
      address: asset,
      abi: eip3009ABI,
      functionName: "authorizationState",
      args: [getAddress(from), nonce],
    })) as boolean;
  } catch (e) {
    // An answer that is not a bool is the token's fault, not the RPC's.
    if (
      e instanceof BaseError &&
      e.walk((x) => x instanceof ContractFunctionZeroDataError || x instanceof ContractFunctionRevertedError)
    ) {
      return "unsupported" as const;
    }
    throw new FacilitatorUnavailableError("RPC did not answer authorizationState");
  }
}

async function assetIsContract(signer: FacilitatorEvmSigner, caip2: string, asset: string) {
  try {
    return (await validateAssetIsContract(signer, caip2, asset)) === "";
  } catch {
    throw new FacilitatorUnavailableError("RPC did not answer getCode");
  }
}

export function createVerifier(deps: VerifierDeps) {
  const schemes = new WeakMap<FacilitatorEvmSigner, { v1: ExactEvmSchemeV1; v2: ExactEvmScheme }>();
  const schemesFor = (signer: FacilitatorEvmSigner) => {
    let s = schemes.get(signer);
    if (!s) {
      // No ERC-6492 factory is trusted: a counterfactual wallet is refused, never deployed on our gas.
      s = { v1: new ExactEvmSchemeV1(signer), v2: new ExactEvmScheme(signer) };
      schemes.set(signer, s);
    }
    return s;
  };

  return async function verifyPayment(request: FacilitatorRequest): Promise<VerifyOutcome> {
    const { paymentPayload: payload, paymentRequirements: req } = request;
    const auth = payload.payload.authorization;
    const payer = getAddress(auth.from);

    const payloadScheme =
      request.x402Version === 1 ? request.paymentPayload.scheme : request.paymentPayload.accepted.scheme;
    if (payloadScheme !== "exact" || req.scheme !== "exact") return invalid(Reason.unsupportedScheme, payer);

    const network = canonicalNetwork(req.network);
    if (!network || !deps.networks.includes(network)) return invalid(Reason.invalidNetwork, payer);
    const payloadNetwork = canonicalNetwork(
      request.x402Version === 1 ? request.paymentPayload.network : request.paymentPayload.accepted.network,
    );
    if (payloadNetwork !== network) return invalid(Reason.networkMismatch, payer);
    if (!req.extra?.name || !req.extra?.version) return invalid(Reason.missingEip712Domain, payer);

    const { chainId, signer } = await deps.chain();
    // The signature's domain uses the network's chain id; an RPC on another chain would settle elsewhere.
    if (chainId !== NETWORKS[network].chainId) return invalid(Reason.invalidNetwork, payer);

    const value = BigInt(auth.value);
    const required = BigInt(
      request.x402Version === 1 ? request.paymentRequirements.maxAmountRequired : request.paymentRequirements.amount,
    );
    if (request.x402Version === 1 ? value < required : value !== required) {
      return invalid(request.x402Version === 1 ? Reason.authorizationValue : Reason.authorizationValueMismatch, payer);
    }

    const asset = getAddress(req.asset);
    const { caip2, v1: v1Name } = NETWORKS[network];
    const schemes = schemesFor(signer);
    // The official verify, fed canonical spellings (and, for v1, the amount it
    // will compare exactly: we allowed >= above).
    const official =
      request.x402Version === 1
        ? schemes.v1.verify(
            { ...request.paymentPayload, network: v1Name } as unknown as PaymentPayload,
            {
              ...request.paymentRequirements,
              network: v1Name,
              maxAmountRequired: auth.value,
            } as unknown as PaymentRequirements,
          )
        : schemes.v2.verify(
            {
              ...request.paymentPayload,
              accepted: { ...request.paymentPayload.accepted, network: caip2 },
            } as unknown as PaymentPayload,
            { ...request.paymentRequirements, network: caip2 } as unknown as PaymentRequirements,
          );
    // Our reads run beside it: one round trip more would be the whole budget on a local chain.
    const [hasCode, used, result] = await Promise.all([
      assetIsContract(signer, caip2, asset),
      nonceUsed(signer, asset, auth.from, auth.nonce).catch((e) => e as Error),
      official.catch(() => undefined),
    ]);
    if (!hasCode) return invalid(Reason.assetNotContract, payer);
    if (used instanceof Error) throw used;
    if (used === "unsupported") return invalid(Reason.eip3009NotSupported, payer);
    if (used) return invalid(Reason.nonceAlreadyUsed, payer);
    if (!result) throw new FacilitatorUnavailableError("verify could not complete");
    if (!result.isValid) return invalid(knownReason(result.invalidReason, Reason.unexpectedVerifyError), payer);

    return {
      response: { isValid: true, payer },
      payment: {
        network,
        chainId,
        asset,
        payer,
        to: getAddress(auth.to),
        value,
        validAfter: BigInt(auth.validAfter),
        validBefore: BigInt(auth.validBefore),
        nonce: auth.nonce as `0x${string}`,
        signature: payload.payload.signature as `0x${string}`,
      },
    };
  };
}

export type Verifier = ReturnType<typeof createVerifier>;
