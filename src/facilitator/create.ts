import type { Settings } from "../settings";
import type { Facilitator } from "./types";

// STUB: the facilitator owner replaces this: FACILITATOR_URL=local -> in-process, else HTTP client.
export function createFacilitator(_settings: Settings): Facilitator {
  const unavailable = async (): Promise<never> => {
    throw new Error("facilitator not implemented yet");
  };
  return { verify: unavailable, settle: unavailable, supported: unavailable };
}
