// The load tester's outcomes and their exit codes, as CI reads them (k6's convention for 99).
export const EXIT = {
  pass: 0,
  /** a threshold failed */
  fail: 99,
  /** the scenario, the flags, the environment or the target's answers to discovery are wrong */
  config: 104,
  /** Ctrl-C (SIGINT) or SIGTERM: stopped early, what was measured is reported */
  interrupted: 105,
  /** the generator could not keep its schedule: the result says nothing about the target */
  invalid: 106,
} as const;

/** A failure that ends the tool with a known exit code and a one-line message. */
export class LoadtestError extends Error {
  constructor(
    readonly kind: keyof typeof EXIT,
    message: string,
  ) {
    super(message);
    this.name = 'LoadtestError';
  }
}
