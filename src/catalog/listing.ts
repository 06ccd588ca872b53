/**
 * What the shop holds, read for people: every file in the content index with
 * the instruction that prices it (`cidgate content list`), and every priced
 * CID with its file (the start-up summary's "for sale" table). Read-only
 * queries across three tables (content_files, cid_mappings,
 * payment_instructions); their writers stay the content and instruction stores.
 */
import type { Db } from "../db/client";
import type { StoredRequirement } from "../instructions/requirements";
import { usd } from "../money";

export interface ListedFile {
  /** Relative to the content folder; undefined for a priced CID with no file in it. */
  path?: string;
  cid: string;
  size?: number;
  /** The pricing instruction: its name, and where it is declared ("config/pricing.yaml#article" or "api <id>"). */
  instruction?: { id: string; name: string; source: string };
  /** "$0.01 on base-sepolia", one per accepted payment, joined with " or ". */
  price?: string;
  /** The first accepted payment's amount in USDC units (for picking the cheapest). */
  units?: string;
}

interface Row {
  path: string | null;
  cid: string;
  size: number | null;
  id: string | null;
  name: string | null;
  source: string | null;
  requirements: string | null;
}

/** `file:pricing.yaml#article` -> `pricing.yaml#article`; an API instruction by its id. */
export function describeSource(source: string, id: string): string {
  return source.startsWith("file:") ? source.slice("file:".length) : `api ${id}`;
}

/** Every way to pay, in dollars: "$0.01 on base-sepolia". */
export function describePrice(requirements: readonly StoredRequirement[]): string {
  return requirements.map((r) => `${usd(r.amount)} on ${r.network}`).join(" or ");
}

function toListed(r: Row): ListedFile {
  const listed: ListedFile = { cid: r.cid };
  if (r.path !== null) listed.path = r.path;
  if (r.size !== null) listed.size = r.size;
  if (r.id !== null && r.name !== null && r.source !== null) {
    listed.instruction = { id: r.id, name: r.name, source: describeSource(r.source, r.id) };
    const requirements = JSON.parse(r.requirements ?? "[]") as StoredRequirement[];
    listed.price = describePrice(requirements);
    listed.units = requirements[0]?.amount;
  }
  return listed;
}

/** Every indexed file, by path, priced or not. */
export function listContent(db: Db): ListedFile[] {
  return db.sqlite
    .query<Row, []>(
      `SELECT f.path, f.cid, f.size, i.id, i.name, i.source, i.requirements
         FROM content_files f
         LEFT JOIN cid_mappings m ON m.cid = f.cid
         LEFT JOIN payment_instructions i ON i.id = m.instruction_id
        ORDER BY f.path`,
    )
    .all()
    .map(toListed);
}

/**
 * Every priced CID, with the file that serves it (several files with the same
 * bytes: the first path); a CID with no file answers 404 and is listed without one.
 */
export function listForSale(db: Db): ListedFile[] {
  return db.sqlite
    .query<Row, []>(
      `SELECT (SELECT f.path FROM content_files f WHERE f.cid = m.cid ORDER BY f.path LIMIT 1) AS path,
              m.cid,
              (SELECT f.size FROM content_files f WHERE f.cid = m.cid ORDER BY f.path LIMIT 1) AS size,
              i.id, i.name, i.source, i.requirements
         FROM cid_mappings m
         JOIN payment_instructions i ON i.id = m.instruction_id
        ORDER BY i.name, path, m.cid`,
    )
    .all()
    .map(toListed);
}

/** The networks buyers may pay on: what the facilitator must settle. */
export function pricedNetworks(db: Db): string[] {
  const rows = db.sqlite
    .query<{ requirements: string }, []>(
      "SELECT DISTINCT i.requirements FROM payment_instructions i WHERE EXISTS (SELECT 1 FROM cid_mappings m WHERE m.instruction_id = i.id)",
    )
    .all();
  const networks = new Set<string>();
  for (const r of rows) for (const req of JSON.parse(r.requirements) as StoredRequirement[]) networks.add(req.network);
  return [...networks].sort();
}
