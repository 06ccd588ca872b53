import { createHash, createECDH } from "node:crypto";
import { decodeProof, matchAndCheck } from "../../src/gateway/proof";
import { privateKeyToAccount, generatePrivateKey } from "viem/accounts";
import { authorizationFor, proofHeader, sign, type Offer } from "./proofs";
try { const e = createECDH("secp256k1"); e.generateKeys(); console.log("ecdh secp256k1 ok"); } catch (e) { console.log("no ecdh secp256k1", String(e)); }
const acc = privateKeyToAccount(generatePrivateKey());
const token = "0x036CbD53842c5426634e7929541eC2318f3dCF7e";
const payTo = "0x1111111111111111111111111111111111111111";
const offer: Offer = {
  v1: { scheme: "exact", network: "base-sepolia", maxAmountRequired: "10000", payTo, asset: token, extra: { name: "USDC", version: "2" } },
  v2: { scheme: "exact", network: "eip155:84532", amount: "10000", payTo, asset: token, extra: { name: "USDC", version: "2" } },
  resource: { url: "http://x/y" },
};
const sig = await sign(acc, offer, authorizationFor(offer, acc.address));
const hs = Array.from({ length: 3000 }, () => proofHeader(1, offer, sig, authorizationFor(offer, acc.address))[1]);
const accepts = [{ network: "base-sepolia", asset: token, payTo: "0x1111111111111111111111111111111111111111", amount: 10000n, v1: {}, v2: {} }] as any;
let t = performance.now();
const ds = hs.map((h) => decodeProof(h));
console.log("decode us", ((performance.now() - t) * 1000 / hs.length).toFixed(1));
t = performance.now();
for (const d of ds) { if (!d.ok) throw 1; const r = await matchAndCheck(d.value, accepts); if (r.ok) throw 2; }
console.log("matchAndCheck us", ((performance.now() - t) * 1000 / hs.length).toFixed(1));
