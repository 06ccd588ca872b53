/**
 * The pricing files' reconcile on PostgreSQL: file-sync.ts's job (same plan,
 * file-sync-plan.ts) in one `pg.transaction`, so readers see the state before
 * or after, never a mix, and a refused sync leaves every row as it was.
 *
 * Several replicas reload the same files at about the same time (each
 * watches its own config folder): without a lock, two would each read "no
 * instruction for file:a.yaml#one" and both insert one, under two ids. So the
 * transaction first takes a transaction-level advisory lock, and the second
 * replica reads the state only once the first has committed; it then finds
 * nothing to do, and writes nothing (no statement at all, so no trigger moves
 * catalog_generation and no replica empties its cache of 402 offers).
 *
 * Writes are one statement per kind, whatever the number of rows: the rows go
 * as one JSON parameter expanded by json_to_recordset (a cold reconcile of
 * tens of thousands of mappings would otherwise be as many round trips, and
 * a multi-row VALUES list stops at PostgreSQL's 65535 parameters).
 */
import { eq, like, sql } from "drizzle-orm";
import type { Pg } from "../db/pg";
import { cidMappings, paymentInstructions } from "../db/schema-pg";
import {
  type FileInstruction,
  type FileSyncResult,
  planFileSync,
  type StoredFileInstruction,
  unmappedCids,
} from "./file-sync-plan";

/**
 * The advisory lock key that serializes pricing reconciles across replicas
 * (pg_advisory_xact_lock: held until the transaction ends, released by a
 * commit, a rollback or a dropped connection). Any fixed 64-bit number no one
 * else on the server uses: the ASCII bytes of "cidgate" and 0x01, one above
 * db/pg.ts's migration lock ("cidgate\0").
 */
export const FILE_SYNC_LOCK_KEY = 0x6369646761746501n;

const FILE = "file:%";

/**
 * A JSON array as one parameter, for json_array_elements_text / json_to_recordset. Sent as text and
 * cast: a parameter typed json is JSON-encoded by Bun's client, and the text would arrive as a string.
 */
const jsonParam = (value: unknown) => sql`${JSON.stringify(value)}::text::json`;

/** The current file-made instructions and their CID mappings (requirements as the stored JSON text). */
async function readState(pg: Pg) {
  const q = pg.q();
  const t = paymentInstructions;
  const existing: StoredFileInstruction[] = await q
    .select({
      id: t.id,
      version: t.version,
      name: t.name,
      description: t.description,
      // json keeps the text as written: compared with the files' JSON before anything is parsed.
      requirements: sql<string>`${t.requirements}::text`,
      source: t.source,
      access: t.access,
      access_scope: t.accessScope,
    })
    .from(t)
    .where(like(t.source, FILE));
  const rows = await q
    .select({ cid: cidMappings.cid, instructionId: cidMappings.instructionId })
    .from(cidMappings)
    .innerJoin(t, eq(t.id, cidMappings.instructionId))
    .where(like(t.source, FILE));
  return { existing, mapped: new Map(rows.map((r) => [r.cid, r.instructionId])) };
}

/** Who holds each of `cids` (any instruction): one query, and none when every desired CID is a file's already. */
async function ownersOf(pg: Pg, cids: string[]): Promise<Map<string, { id: string; name: string }>> {
  const owners = new Map<string, { id: string; name: string }>();
  if (cids.length === 0) return owners;
  const rows = await pg.q().execute<{ cid: string; id: string; name: string }>(sql`
    SELECT m.cid, p.id, p.name FROM cid_mappings m JOIN payment_instructions p ON p.id = m.instruction_id
    WHERE m.cid IN (SELECT json_array_elements_text(${jsonParam(cids)}))`);
  for (const r of rows) owners.set(r.cid, { id: r.id, name: r.name });
  return owners;
}

/**
 * Applies `desired` to the database. Refuses, writing nothing, when a CID is
 * attached to an instruction made through the API.
 */
export function syncFileInstructionsPg<I extends FileInstruction>(
  pg: Pg,
  desired: readonly I[],
  now: Date,
): Promise<FileSyncResult<I>> {
  const stamp = now.toISOString();
  return pg.transaction(async (): Promise<FileSyncResult<I>> => {
    const q = pg.q();
    // First, before any read: under READ COMMITTED (the default) each later statement reads what
    // the previous holder committed.
    await q.execute(sql`SELECT pg_advisory_xact_lock(${FILE_SYNC_LOCK_KEY.toString()}::bigint)`);
    const state = await readState(pg);
    const owners = await ownersOf(pg, unmappedCids(desired, state.mapped));
    const planned = planFileSync(state, desired, (cid) => owners.get(cid));
    if (!planned.ok) return planned;
    const { plan } = planned;

    if (plan.remove.length) {
      const ids = jsonParam(plan.remove);
      await q.execute(sql`DELETE FROM cid_mappings WHERE instruction_id IN (SELECT json_array_elements_text(${ids}))`);
      await q.execute(sql`DELETE FROM payment_instructions WHERE id IN (SELECT json_array_elements_text(${ids}))`);
    }
    // requirements go as JSON inside the JSON: json_to_recordset hands that text on as written.
    const rows = (list: typeof plan.insert) =>
      jsonParam(list.map(({ requirementsJson, ...r }) => ({ ...r, requirements: JSON.parse(requirementsJson) })));
    const columns = sql.raw(
      "r(id text, version integer, name text, description text, requirements json, source text, access text, access_scope text)",
    );
    if (plan.insert.length) {
      await q.execute(sql`
        INSERT INTO payment_instructions
          (id, version, name, description, requirements, source, created_at, updated_at, access, access_scope)
        SELECT r.id, r.version, r.name, r.description, r.requirements, r.source, ${stamp}, ${stamp}, r.access, r.access_scope
        FROM json_to_recordset(${rows(plan.insert)}) AS ${columns}`);
    }
    if (plan.update.length) {
      await q.execute(sql`
        UPDATE payment_instructions p SET name = r.name, description = r.description, requirements = r.requirements,
          version = r.version, updated_at = ${stamp}, access = r.access, access_scope = r.access_scope
        FROM json_to_recordset(${rows(plan.update)}) AS ${columns}
        WHERE p.id = r.id`);
    }
    if (plan.detach.length) {
      await q.execute(
        sql`DELETE FROM cid_mappings WHERE cid IN (SELECT json_array_elements_text(${jsonParam(plan.detach)}))`,
      );
    }
    if (plan.attach.length) {
      await q.execute(sql`
        INSERT INTO cid_mappings (cid, instruction_id, source, created_at)
        SELECT r.cid, r."instructionId", r.source, ${stamp}
        FROM json_to_recordset(${jsonParam(plan.attach)}) AS r(cid text, "instructionId" text, source text)`);
    }
    return { ok: true, changes: plan.changes };
  });
}
