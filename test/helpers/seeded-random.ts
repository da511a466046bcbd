// Seeded randomness for the fuzz tests: a failing run is replayed from its printed seed.

/** The seed of this run: FUZZ_SEED when given, else a fresh one. */
export const fuzzSeed = (): number => Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 32));

/** mulberry32: numbers in [0, 1) from a 32-bit seed, the same sequence for the same seed. */
export function seededRandom(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s + 0x6d2b79f5) | 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
