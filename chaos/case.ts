/**
 * The chaos suite's one interface (`bun run chaos`, chaos/run.ts). Each file
 * in chaos/cases/ has `export default` a ChaosCase: it starts what it needs
 * (devnet, facilitator, cidgate through startServer or as a process, a fault
 * proxy), attacks, stops everything, and returns one row per thing it tried.
 * `wrong` counts outcomes a user would call a bug (content for free, a buyer
 * charged without the file, an authorization used twice...): 0 is a pass.
 */
export interface ChaosRow {
  case: string;
  tried: number;
  wrong: number;
  note?: string;
}

export type ChaosCase = () => Promise<ChaosRow[]>;
