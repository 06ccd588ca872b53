import { Elysia } from "elysia";
import type { AppDeps } from "../app";

// STUB: to be written by the owner of this module.
export function configModule(_deps: AppDeps) {
  return new Elysia({ name: "config" });
}
