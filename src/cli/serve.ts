/**
 * `cidgate serve`: the server, with settings from the environment and `.env`
 * (the same as `npm start`).
 */
import { defineCommand } from "./command";

export const command = defineCommand({
  name: "serve",
  summary: "run the server (settings from the environment and .env; see the README)",
  // The server runs until a signal, and index.ts exits the process itself: never resolves.
  run: () => import("../index").then(() => new Promise<number>(() => {})),
});
