/**
 * An in-process generation of what the gateway sells: every writer of
 * payment_instructions, cid_mappings or content_files calls
 * `catalogChanged()` after its write, and the gateway's catalog throws its
 * cached answers away when the number moved. One integer compare per
 * request instead of a query; ledger writes do not move it, so a payment
 * does not evict every cached 402. Process-wide on purpose (not per
 * connection): a write through any connection in this process is seen at
 * once. Commits by other processes are caught by the catalog's
 * `data_version` check.
 */
let generation = 0;

/** Call after writing payment_instructions, cid_mappings or content_files. */
export function catalogChanged(): void {
  generation++;
}

export function catalogGeneration(): number {
  return generation;
}
