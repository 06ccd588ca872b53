/**
 * What the shop holds, read for people: every file in the content index with
 * the instruction that prices it (`cidgate content list`), and every priced
 * CID with its file (the start-up summary's "for sale" table). Read-only
 * queries (content_files, cid_mappings, payment_instructions); their writers
 * stay the content and instruction stores.
 */
import type { SQL } from "bun";
import type { Db } from "../db/client";
import { type Database, isPg } from "../db/database";
import type { StoredRequirement } from "../instructions/requirements";
import { usd } from "../money";

export interface ListedFile {
  /** Relative to the content folder; undefined for a priced CID with no file in it. */
  path?: string;
  cid: string;
  size?: number;
  /** The pricing instruction: its name, and where it is declared ("pricing.yaml#article" or "api <id>"). */
  instruction?: { id: string; name: string; source: string };
  /** "$0.01 on base-sepolia", one per accepted payment, joined with " or ". */
  price?: string;
  /** The first accepted payment's amount in USDC units (for picking the cheapest). */
  units?: string;
}

/** The instruction a CID is priced by. */
export interface PricedBy {
  id: string;
  name: string;
  source: string;
  requirements: StoredRequirement[];
}

export interface IndexedFile {
  path: string;
  cid: string;
  size: number;
}

/** The content index: every file, by path. */
export function indexedFiles(db: Db): IndexedFile[] {
  return db.sqlite.query<IndexedFile, []>("SELECT path, cid, size FROM content_files ORDER BY path").all();
}

type PricedRow = { cid: string; id: string; name: string; source: string; requirements: unknown };

const pricedQuery = (source?: "api" | "files") =>
  `SELECT m.cid, i.id, i.name, i.source, i.requirements
     FROM cid_mappings m JOIN payment_instructions i ON i.id = m.instruction_id ${
       source === "api" ? "WHERE i.source = 'api'" : source === "files" ? "WHERE i.source LIKE 'file:%'" : ""
     }`;

function pricedMap(rows: readonly PricedRow[]): Map<string, PricedBy> {
  return new Map(
    rows.map((r) => [
      r.cid,
      {
        id: r.id,
        name: r.name,
        source: r.source,
        // SQLite keeps the JSON as text; PostgreSQL's json column comes back parsed.
        requirements: (typeof r.requirements === "string"
          ? JSON.parse(r.requirements)
          : r.requirements) as StoredRequirement[],
      },
    ]),
  );
}

/** CID -> its instruction; `source` "api" keeps only the API's, "files" only the pricing files'. */
export function pricedCids(db: Db, source?: "api" | "files"): Map<string, PricedBy> {
  return pricedMap(db.sqlite.query<PricedRow, []>(pricedQuery(source)).all());
}

/** pricedCids on either engine. */
export async function pricedCidsIn(db: Database, source?: "api" | "files"): Promise<Map<string, PricedBy>> {
  return isPg(db) ? pricedCidsOver(db.sql, source) : pricedCids(db, source);
}

/** pricedCids over a PostgreSQL client: what a command reads without opening (and so migrating) the database. */
export async function pricedCidsOver(client: SQL, source?: "api" | "files"): Promise<Map<string, PricedBy>> {
  return pricedMap(await client.unsafe<PricedRow[]>(pricedQuery(source)));
}

/** `file:pricing.yaml#article` -> `pricing.yaml#article`; an API instruction by its id. */
export function describeSource(source: string, id: string): string {
  return source.startsWith("file:") ? source.slice("file:".length) : `api ${id}`;
}

/** Every way to pay, in dollars: "$0.01 on base-sepolia". */
export function describePrice(requirements: readonly StoredRequirement[]): string {
  return requirements.map((r) => `${usd(r.amount)} on ${r.network}`).join(" or ");
}

function listed(cid: string, file: IndexedFile | undefined, by: PricedBy | undefined): ListedFile {
  const out: ListedFile = { cid };
  if (file) {
    out.path = file.path;
    out.size = file.size;
  }
  if (by) {
    out.instruction = { id: by.id, name: by.name, source: describeSource(by.source, by.id) };
    out.price = describePrice(by.requirements);
    out.units = by.requirements[0]?.amount;
  }
  return out;
}

/** Every indexed file, by path, priced or not. */
export function listContent(files: readonly IndexedFile[], priced: ReadonlyMap<string, PricedBy>): ListedFile[] {
  return files.map((f) => listed(f.cid, f, priced.get(f.cid)));
}

/**
 * Every priced CID by instruction name, with the file that serves it (of
 * several with the same bytes, the first path); a CID with no file answers
 * 404 and is listed without one.
 */
export function listForSale(files: readonly IndexedFile[], priced: ReadonlyMap<string, PricedBy>): ListedFile[] {
  const byCid = new Map<string, IndexedFile>();
  for (const f of files) if (!byCid.has(f.cid)) byCid.set(f.cid, f);
  return [...priced.entries()]
    .map(([cid, by]) => listed(cid, byCid.get(cid), by))
    .sort(
      (a, b) =>
        (a.instruction?.name ?? "").localeCompare(b.instruction?.name ?? "") ||
        (a.path ?? "\uffff").localeCompare(b.path ?? "\uffff") ||
        a.cid.localeCompare(b.cid),
    );
}

/** What a server sells now: its database's priced CIDs, and the files of its content index. */
export async function forSaleIn(db: Database, contentDb: Db): Promise<ListedFile[]> {
  return listForSale(indexedFiles(contentDb), await pricedCidsIn(db));
}

/** The networks buyers may pay on: what the facilitator must settle. */
export function networksOf(priced: ReadonlyMap<string, PricedBy>): string[] {
  const networks = new Set<string>();
  for (const by of priced.values()) for (const r of by.requirements) networks.add(r.network);
  return [...networks].sort();
}
