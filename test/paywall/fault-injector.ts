/**
 * A FAULT INJECTOR around the real facilitator, for page tests: `down`
 * makes it unreachable (what a crashed or firewalled facilitator looks
 * like to the settler), `hold` keeps settle waiting until released (so a
 * test can see the page while a payment settles), `loseSettleAnswers` lets
 * that many settlements happen on chain and then loses their answers (the
 * facilitator's reply never arrives). Everything else goes to
 * the real facilitator and the real chain.
 */
import { type Facilitator, FacilitatorUnavailableError } from "../../src/facilitator/types";

export interface FacilitatorFaults {
  down: boolean;
  /** While set, settle waits for it. */
  hold: Promise<void> | undefined;
  loseSettleAnswers: number;
  verifies: number;
  settles: number;
}

export function facilitatorFaultInjector(real: Facilitator, faults: FacilitatorFaults): Facilitator {
  return {
    async verify(request) {
      faults.verifies++;
      if (faults.down) throw new FacilitatorUnavailableError("fault injected: facilitator down");
      return real.verify(request);
    },
    async settle(request) {
      faults.settles++;
      if (faults.down) throw new FacilitatorUnavailableError("fault injected: facilitator down");
      await faults.hold;
      const answer = await real.settle(request);
      if (faults.loseSettleAnswers > 0) {
        faults.loseSettleAnswers--;
        throw new FacilitatorUnavailableError("fault injected: the settle answer was lost");
      }
      return answer;
    },
    supported: () => real.supported(),
  };
}
