/**
 * A real browser for the UI's tests: Debian's Chromium (installed by the setup, scripts/setup/web.ts) driven by
 * playwright-core, headless; Playwright's own browser downloads are never used. Pages get a desktop-sized window
 * and a default wait long enough for an agent to apply a change, and their screenshots go to docs/screenshots.
 */
import path from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { CHROMIUM } from '../../scripts/setup/web.ts';
import { REPO_ROOT } from './fixtures.ts';

const SCREENSHOTS = path.join(REPO_ROOT, 'docs', 'screenshots');
/** How long a locator waits for its element: an agent's apply and report take a few seconds. */
const WAIT_MS = 30_000;

export function launchBrowser(): Promise<Browser> {
  // No sandbox: the tests run as root, which Chromium's sandbox refuses.
  return chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'], headless: true });
}

/** A page in a context of its own (its own cookies: one user each), at `baseURL`. */
export async function openPage(browser: Browser, baseURL: string): Promise<Page> {
  const context = await browser.newContext({ baseURL, viewport: { width: 1360, height: 860 }, locale: 'en-GB', timezoneId: 'UTC' });
  context.setDefaultTimeout(WAIT_MS);
  return await context.newPage();
}

/** The whole page as docs/screenshots/<name>.png, for docs/ui.md. */
export async function screenshot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
}
