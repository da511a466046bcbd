// Reads of the same thing that may overlap on the team page: a view's poll, and the read the view
// makes right after an operator's change (a decision, a re-arm). Their answers can come back in
// either order; one asked for before the newest answer shown is dropped, because it would bring
// back, until the next poll, what the change replaced.

/**
 * A reader that shows an answer only if no read of the same key (a layout id) asked for later has
 * been shown already. `read()` fetches; `show(data)` puts the answer on the page.
 */
export function latestReads() {
  /** per key: the number of the latest read asked for, and of the latest read shown */
  const reads = new Map();
  return async function latest(key, read, show) {
    const n = reads.get(key) ?? { asked: 0, shown: 0 };
    reads.set(key, n);
    const mine = ++n.asked;
    const data = await read();
    if (mine < n.shown) return;
    n.shown = mine;
    show(data);
  };
}
