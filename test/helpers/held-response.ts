// A page's next read of a URL, held: the request reaches the server now (its answer is what the
// server said at this moment) and the page gets the answer only when the test releases it. For
// tests of what a page does with an answer that comes back after a newer one.
import type { Page } from 'playwright-core';

export interface HeldResponse {
  /** the server has answered the held read */
  readonly read: Promise<void>;
  /** hands the held answer to the page */
  release(): void;
  /** the page has the held answer */
  readonly answered: Promise<void>;
  /** stops holding reads of the URL */
  stop(): Promise<void>;
}

/** Holds the page's next GET of `url` (a Playwright URL glob); later reads pass through. */
export async function holdNextRead(page: Page, url: string): Promise<HeldResponse> {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let readIn!: () => void;
  const read = new Promise<void>((r) => (readIn = r));
  let answeredIn!: () => void;
  const answered = new Promise<void>((r) => (answeredIn = r));
  let held = false;
  await page.route(url, async (route) => {
    if (route.request().method() !== 'GET' || held) return route.continue();
    held = true;
    const response = await route.fetch();
    readIn();
    await gate;
    await route.fulfill({ response }).catch(() => {}); // the page closed meanwhile (a failed test): nothing to hand it
    answeredIn();
  });
  return { read, release, answered, stop: () => page.unroute(url) };
}
