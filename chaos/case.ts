export interface ChaosRow {
  case: string;
  tried: number;
  wrong: number;
  note?: string;
}
export type ChaosCase = () => Promise<ChaosRow[]>;
