// Opens GET /docs in Chromium (npm playwright-core driving Debian's
// chromium) and reports, as one JSON line, what a reader would see: the
// operations Redoc rendered, the requests the page made, and every
// Content-Security-Policy violation, console error and uncaught exception.
// The Go test (TestDocsBrowser) judges the report.
//
// Environment:
//   BASE_URL     the server, e.g. http://127.0.0.1:8080
//   CHROMIUM     the browser binary (default /usr/bin/chromium)
//   SCREENSHOT   a PNG path for a screenshot of the page (optional)
import { importPackage } from '../portal/npm.mjs';

const { chromium } = await importPackage('playwright-core');
const BASE = process.env.BASE_URL;
if (!BASE) throw new Error('BASE_URL is not set');

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'],
});
const report = { violations: [], errors: [], requests: [], operations: [], title: '' };
try {
  const context = await browser.newContext({ viewport: { width: 1440, height: 1000 } });
  context.setDefaultTimeout(30_000);
  context.on('request', (r) => report.requests.push(`${r.method()} ${r.url()}`));
  // A request the policy stopped never left the browser.
  report.blocked = [];
  context.on('requestfailed', (r) => {
    report.blocked.push(`${r.url()} ${r.failure()?.errorText}`);
  });
  // Collected in the page itself: the event carries the directive and
  // the blocked resource, which the console message only paraphrases.
  // Playwright's init scripts are not subject to the page's policy.
  await context.addInitScript(() => {
    window.__csp = [];
    document.addEventListener('securitypolicyviolation', (e) => {
      window.__csp.push(`${e.effectiveDirective} blocked ${e.blockedURI || 'inline'} (${e.sourceFile}:${e.lineNumber})`);
    });
  });
  const page = await context.newPage();
  page.on('pageerror', (err) => report.errors.push(`uncaught: ${err.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') report.errors.push(`console: ${m.text()}`);
  });
  const resp = await page.goto(`${BASE}/docs`);
  report.status = resp.status();
  report.csp = resp.headers()['content-security-policy'] ?? '';
  // Redoc marks each rendered operation with its section id, which ends in
  // operation/<operationId>.
  await page.waitForSelector('[data-section-id*="operation/"]');
  // Search runs in the Worker; typing proves it answers.
  await page.fill('input.search-input', 'forecast');
  report.search = await page.waitForSelector('[data-role="search:results"] li', { timeout: 10_000 })
    .then(() => true, () => false);
  report.operations = await page.$$eval('[data-section-id*="operation/"]',
    (els) => [...new Set(els.map((e) => e.getAttribute('data-section-id').replace(/.*operation\//, '')))]);
  report.title = await page.title();
  if (process.env.SCREENSHOT) await page.screenshot({ path: process.env.SCREENSHOT });
  report.violations = await page.evaluate(() => window.__csp);
} catch (err) {
  report.errors.push(`script: ${err.stack ?? err}`);
} finally {
  await browser.close();
}
console.log(JSON.stringify(report));
