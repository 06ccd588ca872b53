/**
 * `cidgate payments resolve <id>`: an operator resolves a pending payment
 * (ledger/resolve.ts, the same decision as POST /v3/x402/payments/{id}/resolve),
 * writing the database at CIDGATE_DB. With an RPC for the payment's network
 * the chain decides; without one, --settle <tx> or --release, recorded with
 * the OS user as who.
 */
import { userInfo } from "node:os";
import type { ResolveAction } from "../ledger/resolve";
import { defineCommand, UsageError } from "./command";
import { withStores } from "./with-stores";

function osUser(): string {
  try {
    return (
      userInfo()
        .username.replace(/[^\w.@-]/g, "")
        .slice(0, 80) || "?"
    );
  } catch {
    return "?";
  }
}

export const resolve = defineCommand({
  name: "payments resolve",
  summary: "resolve a pending payment: from the chain, or by hand without an RPC (recorded)",
  arguments: [{ name: "id", description: "the payment's id (GET /v3/x402/payments?state=pending)" }],
  options: {
    settle: {
      type: "string",
      value: "<tx>",
      description: "without an RPC: mark it settled by this transaction (found on a block explorer)",
    },
    release: { type: "boolean", description: "without an RPC: release it (the authorization did not pay)" },
    note: { type: "string", value: "<text>", description: "why, kept with the resolution" },
  },
  notes:
    "With RPC_URL (or RPC_URL_BASE / RPC_URL_BASE_SEPOLIA) for the payment's network the chain decides and\n" +
    "--settle / --release are not needed. Prints the payment's state. The database is CIDGATE_DB.",
  async run({ values, positionals: [id], who }) {
    if (!/^[0-9]{1,15}$/.test(id)) throw new UsageError(`${JSON.stringify(id)} is not a payment id`);
    if (values.settle !== undefined && values.release) throw new UsageError("give --settle or --release, not both");
    if (values.settle !== undefined && !/^0x[0-9a-fA-F]{64}$/.test(values.settle))
      throw new UsageError(`--settle ${JSON.stringify(values.settle)} is not a 0x-prefixed 32-byte hex hash`);
    const action: ResolveAction = values.settle !== undefined ? "settle" : values.release ? "release" : "check";
    // Loaded when run: `cidgate --help` loads every command's file.
    const [{ default: pino }, { createLogger }, { resolvePayment }, { resolveDeps }] = await Promise.all([
      import("pino"),
      import("../http/logging"),
      import("../ledger/resolve"),
      import("../ledger/resolve-deps"),
    ]);
    return withStores(who, async (stores, { settings }) => {
      // The command's one line is its answer on stdout: the ledger's log lines go to stderr.
      const deps = resolveDeps(stores, settings, createLogger(settings.logLevel, pino.destination(2)));
      const { payment, resolution } = await resolvePayment(deps, {
        id: Number(id),
        action,
        transaction: values.settle,
        note: values.note,
        actor: `cli:${osUser()}`,
      });
      const tx = payment.txHash ? ` by ${payment.txHash}` : "";
      console.log(`payment ${payment.id}: ${payment.state}${tx} (on the ${resolution.basis}'s word)`);
      return 0;
    });
  },
});
