import { Elysia } from "elysia";
import type { AppDeps } from "../app";

// STUB: to be written by the owner of this module.
export function gatewayModule(_deps: AppDeps) {
  return new Elysia({ name: "gateway" });
}
