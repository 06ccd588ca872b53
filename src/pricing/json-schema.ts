/**
 * The JSON Schema of a pricing file, as committed in schema/pricing.schema.json:
 * the TypeBox model with TypeBox's own markers removed.
 */
import { PricingFileModel } from "./schema";

export function pricingJsonSchema(): string {
  const plain = JSON.parse(JSON.stringify(PricingFileModel));
  return `${JSON.stringify({ $schema: "http://json-schema.org/draft-07/schema#", ...plain }, null, 2)}\n`;
}
