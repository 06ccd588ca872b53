/**
 * Other replicas' catalog writes, seen on PostgreSQL: the catalog_generation
 * row (moved by triggers on payment_instructions and cid_mappings,
 * drizzle-pg/0003) read every `everyMs` in the background. `current` is what
 * src/stores-pg.ts hands createCatalogChanges as `elsewhere`: the catalog
 * asks it on requests (at most every ELSEWHERE_CHECK_MS), so it must answer
 * from memory, never with a query.
 *
 * The budget: a write on one replica is seen by every other within about
 * 1 s = this poll (250 ms) + the catalog's own check (100 ms, gateway/
 * catalog.ts) + a query's round trip, with room to spare on a slow link.
 * One query of one row per replica every 250 ms is nothing for the server;
 * LISTEN/NOTIFY would need a connection held out of the pool per replica
 * and still a poll to cover a dropped one.
 */
import { sql } from "drizzle-orm";
import type { Pg } from "./pg";

export interface CatalogGenerationPoll {
  /** The last generation read (-1 before the first read answers). */
  current(): number;
  /** Stops polling (at shutdown); a read under way finishes and is dropped. */
  stop(): void;
}

/** Where a failed read is said: the stores have no logger, so one JSON line on stderr by default. */
export interface PollLog {
  error(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

const stderrLog: PollLog = {
  error: (obj, msg) => console.error(JSON.stringify({ level: "error", ...obj, msg })),
  info: (obj, msg) => console.error(JSON.stringify({ level: "info", ...obj, msg })),
};

export function pollCatalogGeneration(pg: Pg, everyMs = 250, log: PollLog = stderrLog): CatalogGenerationPoll {
  let generation = -1;
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  /** A failing read is said once, not four times a second, and its recovery once. */
  let failing = false;

  async function read(): Promise<void> {
    try {
      // The pool, never pg.q(): the timers carry the async context they were made in, and a poll
      // started inside a transaction must not query through it after it ended. Raw SQL hands the
      // bigint over as text.
      const [row] = await pg.db.execute<{ g: string }>(sql`SELECT generation::text AS g FROM catalog_generation`);
      if (row) generation = Number(row.g);
      if (failing) log.info({ event: "catalog-generation" }, "reading catalog_generation again");
      failing = false;
    } catch (error) {
      if (!failing) {
        // The server's reason (drizzle wraps it as "Failed query: ..." with it as the cause), no stack.
        const inner = error instanceof Error && error.cause instanceof Error ? error.cause : error;
        const err = inner instanceof Error ? inner.message : String(inner);
        log.error(
          { event: "catalog-generation", err },
          "cannot read catalog_generation: other replicas' catalog writes go unseen until it answers; retrying",
        );
      }
      failing = true;
    }
  }

  function schedule(): void {
    if (stopped) return;
    // A chain of timeouts, not an interval: reads never overlap on a slow server.
    timer = setTimeout(() => void read().finally(schedule), everyMs);
    // The poll must not keep a process (a CLI command, a test) alive.
    timer.unref();
  }

  void read().finally(schedule);

  return {
    current: () => generation,
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
  };
}
