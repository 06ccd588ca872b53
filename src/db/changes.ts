/**
 * The generation of what the gateway sells, one signal per app: the stores
 * that write payment_instructions, cid_mappings or content_files are handed
 * it and bump it once per committed write (a transaction, not a statement),
 * and the gateway's catalog throws its cached answers away when the number
 * moved. One integer compare per request instead of a query; ledger writes
 * do not move it, so a payment does not evict every cached 402. Commits by
 * other processes are caught by the catalog's `data_version` check.
 *
 * Made once per app (createStores) and shared by every store over its
 * database: a writer holding another signal would go unseen by the catalog,
 * since writes through the same connection do not move `data_version`.
 */
export interface CatalogChanges {
  /** Read on every gateway request: a plain field, not a getter. */
  readonly generation: number;
  /** Call once after a committed write to payment_instructions, cid_mappings or content_files. */
  bump(): void;
}

export function createCatalogChanges(): CatalogChanges {
  const signal = {
    generation: 0,
    bump() {
      signal.generation++;
    },
  };
  return signal;
}
