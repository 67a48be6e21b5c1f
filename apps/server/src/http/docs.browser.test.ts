import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testServer, type TestServer } from '@strongroom/tests';
import { listen } from './serve-for-test.js';

// The reference page in a real headless Chromium (Debian's; .ci/run installs it), over a real
// socket, with every request to another origin blocked: the page must render the operations from
// what this server alone serves.

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const available = existsSync(CHROMIUM);
if (!available)
  console.log(`docs.browser.test: skipped, no Chromium at ${CHROMIUM} (install Debian's chromium, as .ci/run does)`);

let s: TestServer;
let net: { base: string; close: () => Promise<void> };
let profile: string;
let browser: BrowserContext;
const foreign: string[] = [];

beforeAll(async () => {
  if (!available) return;
  s = await testServer();
  net = await listen(s.app);
  profile = mkdtempSync(join(tmpdir(), 'strongroom-chromium-'));
  browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: FLAGS,
    viewport: { width: 1280, height: 900 },
  });
  const origin = new URL(net.base).origin;
  await browser.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith('data:') || url.startsWith('blob:') || new URL(url).origin === origin) return route.continue();
    foreign.push(url);
    return route.abort('blockedbyclient');
  });
}, 60_000);

afterAll(async () => {
  if (!available) return;
  await browser?.close();
  await net?.close();
  await s?.close();
  rmSync(profile, { recursive: true, force: true });
});

/**
 * How much of a screenshot is drawn: the share of pixels that differ from the most common colour
 * (the background), and the number of distinct colours. Measured by decoding the PNG in a canvas of
 * a blank page of the same browser (nothing leaves the machine).
 */
async function inked(page: Page, png: Buffer): Promise<{ share: number; colours: number }> {
  const scratch = await page.context().newPage();
  try {
    await scratch.setContent('<canvas id="c"></canvas>');
    return await scratch.evaluate(async (b64) => {
      const img = new Image();
      img.src = `data:image/png;base64,${b64}`;
      await img.decode();
      const canvas = document.getElementById('c') as HTMLCanvasElement;
      canvas.width = img.width;
      canvas.height = img.height;
      const ctx = canvas.getContext('2d')!;
      ctx.drawImage(img, 0, 0);
      const data = ctx.getImageData(0, 0, img.width, img.height).data;
      const counts = new Map<number, number>();
      for (let i = 0; i < data.length; i += 4) {
        const key = (data[i]! << 16) | (data[i + 1]! << 8) | data[i + 2]!;
        counts.set(key, (counts.get(key) ?? 0) + 1);
      }
      const background = Math.max(...counts.values());
      const total = data.length / 4;
      return { share: (total - background) / total, colours: counts.size };
    }, png.toString('base64'));
  } finally {
    await scratch.close();
  }
}

describe.skipIf(!available)('the reference page at /docs in headless Chromium', () => {
  it('renders every operation from /openapi.json with nothing fetched from another origin', {
    timeout: 60_000,
  }, async () => {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    const res = await page.goto(`${net.base}/docs`, { waitUntil: 'networkidle' });
    expect(res?.status()).toBe(200);
    await page.waitForSelector('.opblock-summary', { timeout: 30_000 });
    const doc = (await (await fetch(`${net.base}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, unknown>>;
    };
    const expected = Object.values(doc.paths).reduce((n, item) => n + Object.keys(item).length, 0);
    expect(await page.locator('.opblock-summary').count()).toBe(expected);
    const text = await page.locator('body').innerText();
    for (const path of ['/v1/auth/register', '/upload/{id}/finalize', '/.well-known/svc/server-info'])
      expect(text).toContain(path);
    expect(text).toContain('Strongroom API');
    expect(foreign).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('"Try it out" works at an address other than the document\'s server (SVC_BASE_URL)', {
    timeout: 60_000,
  }, async () => {
    // The test server's SVC_BASE_URL is http://127.0.0.1:8080; the page is served on another port.
    expect(new URL(net.base).origin).not.toBe('http://127.0.0.1:8080');
    const page = await browser.newPage();
    await page.goto(`${net.base}/docs`, { waitUntil: 'networkidle' });
    const op = page
      .locator('.opblock.opblock-get')
      .filter({ has: page.locator('.opblock-summary-path', { hasText: /^\/\.well-known\/svc\/server-info$/ }) });
    await op.locator('.opblock-summary').click();
    await op.locator('button.try-out__btn').click();
    await op.locator('button.execute').click();
    await op.locator('.live-responses-table tbody .response-col_status').first().waitFor({ timeout: 30_000 });
    expect((await op.locator('.live-responses-table tbody .response-col_status').first().innerText()).trim()).toBe(
      '200',
    );
    expect(foreign).toEqual([]);
    await page.close();
  });

  it('is not blank in a screenshot (and the measure tells a blank page)', { timeout: 60_000 }, async () => {
    const page = await browser.newPage();
    await page.goto(`${net.base}/docs`, { waitUntil: 'networkidle' });
    await page.waitForSelector('.opblock-summary', { timeout: 30_000 });
    const shot = await page.screenshot({ fullPage: false });
    const drawn = await inked(page, shot);
    // Kept only when the page looks blank, to see what the browser drew.
    const file = join(tmpdir(), `strongroom-docs-${process.pid}.png`);
    if (drawn.share <= 0.03 || drawn.colours <= 20) writeFileSync(file, shot);
    expect(drawn.share, `screenshot at ${file}`).toBeGreaterThan(0.03);
    expect(drawn.colours, `screenshot at ${file}`).toBeGreaterThan(20);

    await page.setContent('<html><body style="background:#fff"></body></html>');
    const blank = await inked(page, await page.screenshot());
    expect(blank.share).toBeLessThan(0.001);
    await page.close();
  });

  it('serves only the renderer assets it names', async () => {
    for (const [path, type] of [
      ['/docs/swagger-ui-bundle.js', 'text/javascript'],
      ['/docs/swagger-ui.css', 'text/css'],
      ['/docs/init.js', 'text/javascript'],
    ] as const) {
      const r = await fetch(net.base + path);
      expect(r.status, path).toBe(200);
      expect(r.headers.get('content-type'), path).toContain(type);
      expect(r.headers.get('content-security-policy'), path).toContain("default-src 'none'");
    }
    const other = await fetch(`${net.base}/docs/package.json`);
    expect(other.status).toBe(404);
    expect(other.headers.get('content-type')).toBe('application/problem+json');
  });
});
