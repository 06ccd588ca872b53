/**
 * Where the statistics are gathered, as wrappers so the code they watch
 * stays as it is: the purchase decision (offers and proofs per CID, proof
 * outcomes) and the server's fetch handlers (requests by route and status).
 *
 * Counted: GET requests only. A HEAD asks what a GET would answer and never
 * pays, so it neither shows a buyer an offer nor presents a payment.
 */
import type { Decision, Purchase, PurchaseRequest } from "../gateway/purchase";
import type { FunnelCounters } from "./counters";
import type { Metrics, ProofOutcome } from "./metrics";

interface Priced {
  cid: string;
  instruction: { id: string };
}

function outcomeOf(d: Decision): ProofOutcome {
  switch (d.kind) {
    case "serve":
      // Timings come with a settlement this request made; without them it was served on an earlier one.
      return d.timings ? "settled" : "served";
    case "refuse":
      return "refused";
    case "notFound":
      return "not_found";
    case "rangeNotSatisfiable":
      return "range_not_satisfiable";
    case "fileChanged":
      return "file_changed";
    case "tooManyFailures":
      return "too_many_failures";
    default:
      return d.kind;
  }
}

/**
 * The purchase decision, counting. The 402 stays synchronous: an offer
 * costs one kind check and a counter bump (counters.ts).
 */
export function observePurchase(
  purchase: Purchase,
  deps: {
    counters: FunnelCounters;
    metrics: Metrics;
    /** The catalog's cached item of a CID (never a query), for a proof whose decision names none (pending, unavailable, conflict). */
    peek: (cid: string) => Priced | undefined;
  },
): Purchase {
  const { counters, metrics } = deps;

  function proofSeen(request: PurchaseRequest, d: Decision): Decision {
    // The decision looked the CID up a moment ago: its answer is in the catalog's cache (one just
    // dropped by a change is not asked again: one proof uncounted).
    const item = "item" in d ? d.item : d.kind === "notFound" ? undefined : deps.peek(request.cid);
    if (item) counters.proof(item);
    metrics.proof(outcomeOf(d));
    return d;
  }

  const seen = (d: Decision): Decision => {
    if (d.kind === "offer") counters.offer(d.item);
    return d;
  };

  return {
    decide(request) {
      const d = purchase.decide(request);
      if (!request.charge) return d;
      const { paymentSignature, xPayment } = request.credentials;
      if (paymentSignature || xPayment) {
        if (!(d instanceof Promise)) return proofSeen(request, d);
        return d.then(
          (done) => proofSeen(request, done),
          (error) => {
            metrics.proof("error");
            throw error;
          },
        );
      }
      // A decision that is a promise (an access token or a sign-in) may still end in the offer.
      return d instanceof Promise ? d.then(seen) : seen(d);
    },
  };
}

/** A literal path segment (kept in the route label); anything else is an id (":id"). */
const LITERAL = /^[a-z][a-z0-9_-]{0,31}$/;

/**
 * The route label of a path: literal segments kept, ids replaced by ":id"
 * (`/v3/x402/payment_instructions/:id/cids/:id`), so labels stay few.
 */
export function routeLabel(path: string): string {
  let label = "";
  let depth = 0;
  for (const segment of path.split("/")) {
    if (segment === "") continue;
    if (++depth > 6) break;
    label += `/${LITERAL.test(segment) ? segment : ":id"}`;
  }
  return label || "/";
}

/** The path of a URL, without parsing it (and never its query string). */
function pathOf(url: string): string {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  if (start < 0) return "/";
  const query = url.indexOf("?", start);
  return query < 0 ? url.slice(start) : url.slice(start, query);
}

/**
 * The request counter of the server's fetch (withRequestLog's `count`): by
 * route label; a 404 is counted as "unmatched" (a scan of random paths must
 * not make labels).
 */
export function requestCounter(metrics: Metrics): (status: number, request: Request) => void {
  const counters = new Map<string, (status: number) => void>();
  return (status, request) => {
    const route = status === 404 ? "unmatched" : routeLabel(pathOf(request.url));
    let count = counters.get(route);
    if (!count) {
      count = metrics.requestCounter(route);
      if (counters.size < 256) counters.set(route, count);
    }
    count(status);
  };
}
