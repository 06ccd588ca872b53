/** `cidgate restore <file>`: defined beside `cidgate backup` (backup.ts). */
export { restore as command } from "./backup";
