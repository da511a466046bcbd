// Seeded randomness for the fuzz tests: a failing run is replayed from its printed seed.

/** The seed of this run: FUZZ_SEED when given, else a fresh one. */
export const fuzzSeed = (): number => Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 32));

/** mulberry32, the one the load tester's crowd model uses: the same sequence for the same seed. */
export { seededRandom } from '../../loadtest/crowd-model.js';
