/**
 * Test-only crash points of a paid passport request (issue 23): with NODE_ENV=test and
 * API_TEST_KILL_POINT naming a point, the API process SIGKILLs itself when a request reaches it, as an
 * operator's kill -9 would (test/reliability/paymentKill.test.ts). Anywhere else the hook does nothing.
 *
 *   after-verify  the facilitator verified the payment; nothing recorded, no money moved
 *   after-record  the payment and the request's claim are recorded; the workflow is not started
 *   after-start   the workflow is started (it settles the payment); the API has not waited
 *   after-settle  the workflow answered (payment settled, passport issued); the answer is not sent
 */
import type { Config } from '../../config/index.js';

export type KillPoint = NonNullable<Config['API_TEST_KILL_POINT']>;

/** The saga's one test hook (`Passports.killPoint`): decided once from the configuration, a no-op outside tests. */
export function killPointHook(config: Config): (point: KillPoint) => void {
  const armed = config.NODE_ENV === 'test' ? config.API_TEST_KILL_POINT : undefined;
  if (!armed) return () => undefined;
  return (point) => {
    if (point === armed) process.kill(process.pid, 'SIGKILL');
  };
}
