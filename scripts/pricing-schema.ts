/**
 * Writes schema/pricing.schema.json from the TypeBox model in
 * src/pricing/schema.ts, so editors complete and check pricing files
 * (`# yaml-language-server: $schema=../schema/pricing.schema.json`).
 * test/pricing/schema.test.ts fails when the committed file is stale.
 *
 *   bun scripts/pricing-schema.ts
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { pricingJsonSchema } from "../src/pricing/json-schema";

const out = join(import.meta.dir, "../schema/pricing.schema.json");
writeFileSync(out, pricingJsonSchema());
console.log(`wrote ${out}`);
