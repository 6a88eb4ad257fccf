// End-to-end test of the operators' web console in a real browser: npm
// playwright-core drives Debian's Chromium against a running `schedbridge
// serve` and a real OpenID Connect provider (../portal/idp.mjs). The Go
// test cmd/schedbridge/console_e2e_test.go (TestConsoleBrowser) prepares the
// data (a chain run on the spring-forward day, a failed stage whose cause is
// fixed, a rejected file whose cause is fixed, a Nachversand entry) and runs
// this script; `make screenshots` runs it with the screenshots going to
// docs/screenshots.
//
// Environment:
//   BASE_URL         the server's origin, http://localhost:<port>
//   SCREENSHOT_DIR   where the PNGs go (desktop and phone width)
//   CHROMIUM         the browser binary (default /usr/bin/chromium)
//   OPERATOR_LOGIN   an account in the operator group
//   OUTSIDER_LOGIN   an account that is no operator
//   DST_DAY          the spring-forward day with a chain run (92 quarter-hours)
//   FAIL_DAY         a day whose aggregate run failed and can now succeed
//   CALC_FROM        the start of the Kalkulation period that ends on DST_DAY,
//                    which was calculated with prices missing
//   REJECTED_FILE    the name of the rejected file to retry
//   PARTNER_NAME     the market partner of the Nachversand entry
//   PROCESS_KEY      a process key, used outside the browser to cause an event
//   COOKIE_PREFIX    the cookies' name prefix (default "__Host-")
//
// It prints one line per step and, at the end, "SECRETS <value> ..." with
// every session id, CSRF token and login-flow token the browser held, so
// that the Go test can check that none reached the server's log. It exits
// non-zero on the first failed expectation.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

import { atPath as atPathOf, check, log, need, visible } from '../portal/e2e-lib.mjs';
import { importPackage } from '../portal/npm.mjs';

const { chromium } = await importPackage('playwright-core');

const BASE = need('BASE_URL').replace(/\/+$/, '');
const atPath = (page, path, what) => atPathOf(page, BASE, path, what);
const SCREENSHOT_DIR = need('SCREENSHOT_DIR');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const OPERATOR_LOGIN = need('OPERATOR_LOGIN');
const OUTSIDER_LOGIN = need('OUTSIDER_LOGIN');
const DST_DAY = need('DST_DAY');
const FAIL_DAY = need('FAIL_DAY');
const CALC_FROM = need('CALC_FROM');
const REJECTED_FILE = need('REJECTED_FILE');
const PARTNER_NAME = need('PARTNER_NAME');
const PROCESS_KEY = need('PROCESS_KEY');
const PREFIX = process.env.COOKIE_PREFIX ?? '__Host-';
const COOKIES = [`${PREFIX}sb_session`, `${PREFIX}sb_csrf`, `${PREFIX}sb_login`];

mkdirSync(SCREENSHOT_DIR, { recursive: true });
const secrets = new Set();

// until waits for fn(arg) to hold on the page; a timeout says what was
// awaited and what the page's alert and status regions showed.
async function until(page, fn, arg, what, timeout) {
  try {
    await page.waitForFunction(fn, arg, { timeout });
  } catch (err) {
    const alert = await page.locator('#fehler').textContent().catch(() => '');
    const status = await page.locator('#meldung').textContent().catch(() => '');
    throw new Error(`e2e: expected ${what}: ${err.message.split('\n')[0]} (alert "${alert}", status "${status}")`);
  }
}

const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1280, height: 900 };

// shot takes the page at desktop and at phone width.
async function shot(page, name) {
  await page.setViewportSize(DESKTOP);
  await page.screenshot({ path: join(SCREENSHOT_DIR, `console-${name}-desktop.png`), fullPage: true });
  await page.setViewportSize(PHONE);
  await page.screenshot({ path: join(SCREENSHOT_DIR, `console-${name}-phone.png`), fullPage: true });
  await page.setViewportSize(DESKTOP);
  log(`screenshots console-${name}`);
}

// open starts a fresh context that records every URL and every error on
// the console's pages (a CSP violation is a console error in Chromium).
async function open(browser) {
  const context = await browser.newContext({ viewport: DESKTOP, locale: 'de-DE', timezoneId: 'Europe/Berlin' });
  context.setDefaultTimeout(15_000);
  const rec = { urls: [], locations: [], errors: [], csp: [] };
  context.on('request', (r) => rec.urls.push(r.url()));
  context.on('response', (r) => {
    const loc = r.headers().location;
    if (loc) rec.locations.push(new URL(loc, r.url()).href);
  });
  const page = await context.newPage();
  page.on('pageerror', (err) => rec.errors.push(`uncaught: ${err.message}`));
  page.on('console', (m) => {
    if (m.type() !== 'error' || !page.url().startsWith(BASE)) return;
    // An action refused by the API (a 4xx shown in the page's alert) is
    // logged by Chromium as a failed resource; everything else is a defect.
    if (m.text().startsWith('Failed to load resource')) return;
    if (m.text().includes('Content Security Policy')) rec.csp.push(m.text());
    rec.errors.push(`console: ${m.text()}`);
  });
  // The CSP reports itself to the page too.
  await page.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (e) => {
      console.error(`Content Security Policy violation: ${e.violatedDirective} ${e.blockedURI}`);
    });
  });
  return { context, page, rec };
}

async function collectSecrets(context) {
  for (const c of await context.cookies(BASE)) {
    if (COOKIES.includes(c.name) && c.value) secrets.add(c.value);
  }
}

async function checkClean(context, rec, scenario) {
  await collectSecrets(context);
  for (const u of [...rec.urls, ...rec.locations]) {
    for (const s of secrets) {
      check(!u.includes(s), `${scenario}: the URL ${u} contains a session id, CSRF token or flow token`);
    }
    check(!u.includes(PROCESS_KEY), `${scenario}: the URL ${u} contains the API key`);
  }
  check(rec.csp.length === 0, `${scenario}: Content-Security-Policy violations:\n${rec.csp.join('\n')}`);
  check(rec.errors.length === 0, `${scenario}: errors on console pages:\n${rec.errors.join('\n')}`);
  log(`${scenario}: ${rec.urls.length} requests, no secret in a URL, no console error, no CSP violation`);
}

async function signIn(page, login) {
  await page.goto(`${BASE}/console/`);
  await atPath(page, '/console/anmelden', 'the console sign-in page');
  await page.getByRole('link', { name: 'Mit Firmenkonto anmelden' }).click();
  await visible(page.getByLabel('Login'), "the identity provider's login form");
  await page.getByLabel('Login').fill(login);
  await page.getByLabel('Password').fill('beliebig');
  await page.getByRole('button', { name: 'Sign in' }).click();
}

function nav(page, label) {
  return page.getByRole('navigation', { name: 'Hauptnavigation' }).getByRole('link', { name: label, exact: true });
}

// stageRow is the row of a stage in the Lage page's chain table.
function stageRow(page, label) {
  return page.getByRole('table', { name: /Stufen der Kette/ }).getByRole('row').filter({
    has: page.getByRole('rowheader', { name: label, exact: true }),
  });
}

async function outsider(browser) {
  const { context, page, rec } = await open(browser);
  const S = 'outsider';
  log(`${S}: sign in as ${OUTSIDER_LOGIN}, who is no operator`);
  await signIn(page, OUTSIDER_LOGIN);
  await atPath(page, '/console/lage', 'the console after the sign-in');
  await visible(page.getByRole('heading', { level: 1, name: 'Kein Zugang' }), 'the 403 page "Kein Zugang"');
  const resp = await page.request.get(`${BASE}/console/lage`);
  check(resp.status() === 403, `GET /console/lage answered ${resp.status()} for a non-operator, want 403`);
  const api = await page.request.get(`${BASE}/v1/console/summary`);
  check(api.status() === 403, `GET /v1/console/summary answered ${api.status()} for a non-operator's session, want 403`);
  await shot(page, '00-kein-zugang');
  await checkClean(context, rec, S);
  await context.close();
}

async function operator(browser) {
  const { context, page, rec } = await open(browser);
  const S = 'operator';

  log(`${S}: /console/ without a session goes to the sign-in page`);
  await page.goto(`${BASE}/console/`);
  await atPath(page, '/console/anmelden', 'the sign-in page');
  await shot(page, '01-anmelden');
  log(`${S}: sign in as ${OPERATOR_LOGIN}`);
  await page.getByRole('link', { name: 'Mit Firmenkonto anmelden' }).click();
  await page.getByLabel('Login').fill(OPERATOR_LOGIN);
  await page.getByLabel('Password').fill('beliebig');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await atPath(page, '/console/lage', 'the Lage page after the sign-in');
  await visible(page.getByRole('heading', { level: 1, name: 'Lage' }), 'the heading "Lage"');

  log(`${S}: Lage of the spring-forward day ${DST_DAY}`);
  await page.getByLabel('Liefertag').fill(DST_DAY);
  await page.getByRole('button', { name: 'Anzeigen' }).click();
  await page.waitForURL((u) => u.searchParams.get('day') === DST_DAY);
  await visible(page.getByText('92 Viertelstunden'), 'the 92 quarter-hours of the spring-forward day');
  const charts = page.locator('figure.area svg.chart');
  check(await charts.count() > 0, 'no position chart on the Lage page');
  for (let i = 0; i < await charts.count(); i++) {
    const cols = await charts.nth(i).locator('g.hover rect').count();
    check(cols === 92, `chart ${i} has ${cols} quarter-hour columns, want 92`);
    const ticks = await charts.nth(i).locator('text').allTextContents();
    check(!ticks.some((t) => /^02(:|$)/.test(t)), `chart ${i} labels an hour 02 on the spring-forward day: ${ticks.join(' ')}`);
  }
  const chain = stageRow(page, 'Fahrpläne');
  await visible(chain.getByText('erfolgreich'), 'the schedules stage succeeded on the spring-forward day');
  check(await page.locator('#frist').textContent() !== '', 'no countdown to the deadline');
  await shot(page, '02-lage');
  const table = page.locator('figure.area details').first();
  await table.locator('summary').click();
  check(await table.locator('tbody tr').count() === 92, 'the table alternative of the chart has not 92 rows');
  const times = await table.locator('tbody th').allTextContents();
  check(times[7] === '01:45' && times[8] === '03:00', `the table goes ${times[7]} -> ${times[8]} at the clock change, want 01:45 -> 03:00`);

  log(`${S}: a failed stage on ${FAIL_DAY} is retried from the page and turns green`);
  await page.goto(`${BASE}/console/lage?day=${FAIL_DAY}`);
  const agg = stageRow(page, 'Aggregation');
  await visible(agg.getByText('fehlgeschlagen'), `the failed aggregate stage of ${FAIL_DAY}`);
  await page.evaluate(() => { window.__noReload = 'still here'; });
  await page.waitForFunction(() => document.getElementById('live-status')?.textContent === 'verbunden');
  await agg.getByRole('button', { name: 'Wiederholen' }).click();
  await visible(page.getByRole('status').filter({ hasText: 'Auftrag angenommen.' }), 'the notice that the retry was accepted');
  await visible(stageRow(page, 'Aggregation').getByText('erfolgreich'), 'the retried aggregate stage shown as succeeded', 60_000);
  check(await page.evaluate(() => window.__noReload) === 'still here', 'the page was reloaded; the update must come in place');
  await visible(page.locator('#live li').filter({ hasText: 'Lauf erfolgreich' }), 'the live event "Lauf erfolgreich"');

  log(`${S}: a live event caused elsewhere appears without a reload`);
  const before = await page.locator('#live li').count();
  const start = await fetch(`${BASE}/v1/console/runs`, {
    method: 'POST',
    headers: { 'X-API-Key': PROCESS_KEY, 'Content-Type': 'application/json', 'Idempotency-Key': 'e2e-live-1' },
    body: JSON.stringify({ stage: 'open-position', day: FAIL_DAY }),
  });
  check(start.status === 202, `starting a run with the process key answered ${start.status}`);
  await until(page, (n) => document.querySelectorAll('#live li').length > n, before, 'a new live event', 30_000);
  await visible(page.locator('#live li').filter({ hasText: 'Lauf gestartet' }), 'the live event "Lauf gestartet"');
  check(await page.evaluate(() => window.__noReload) === 'still here', 'the page was reloaded by the live event');

  log(`${S}: Läufe with filters and one run`);
  await nav(page, 'Läufe').click();
  await atPath(page, '/console/laeufe', 'the Läufe page');
  await page.getByLabel('Zustand', { exact: true }).selectOption('failed');
  await page.getByRole('button', { name: 'Filtern' }).click();
  await page.waitForURL((u) => u.searchParams.get('status') === 'failed');
  const failed = page.getByRole('row').filter({ hasText: 'fehlgeschlagen' });
  await visible(failed, 'a failed run in the filtered list');
  await shot(page, '03-laeufe');
  await failed.first().getByRole('link').first().click();
  await visible(page.getByRole('heading', { level: 2, name: 'Protokoll' }), 'the run page with its log');
  await visible(page.getByText('no complete forecast_malo snapshot'), "the failed run's error");
  await shot(page, '04-lauf');

  log(`${S}: Eingang: the rejected ${REJECTED_FILE} is retried after its cause was fixed`);
  await nav(page, 'Eingang').click();
  await atPath(page, '/console/eingang', 'the Eingang page');
  const file = page.getByRole('row').filter({ has: page.getByRole('rowheader', { name: REJECTED_FILE }) });
  await visible(file, `the rejected file ${REJECTED_FILE}`);
  await visible(file.getByText('unknown portfolio'), 'the reason of the rejection');
  await visible(file.getByRole('link', { name: 'Beleg' }), 'the link to the receipt');
  const receipt = await page.request.get(BASE + await file.getByRole('link', { name: 'Beleg' }).getAttribute('href'));
  const doc = receipt.status() === 200 ? await receipt.json() : {};
  check(String(doc.reason).includes('unknown portfolio') && doc.file?.endsWith(REJECTED_FILE),
    `the receipt answered ${receipt.status()} ${JSON.stringify(doc)}; want the errors document with the reason`);
  await shot(page, '05-eingang');
  await file.getByRole('button', { name: 'Erneut verarbeiten' }).click();
  await visible(page.getByRole('status').filter({ hasText: 'Auftrag angenommen.' }), 'the notice that the retry was accepted');
  await until(page, (name) => ![...document.querySelectorAll('#seite th')].some((th) => th.textContent === name),
    REJECTED_FILE, 'the retried file to leave the rejected list', 30_000);

  log(`${S}: Fahrpläne of ${DST_DAY}`);
  await nav(page, 'Fahrpläne').click();
  await page.goto(`${BASE}/console/fahrplaene?day=${DST_DAY}`);
  await visible(page.getByRole('cell', { name: /gesendet|angenommen|bestätigt/ }), 'a schedule version with its state');
  await shot(page, '06-fahrplaene');

  log(`${S}: Marktpartner, and the Nachversand entry of ${PARTNER_NAME} is deleted`);
  await nav(page, 'Marktpartner').click();
  await atPath(page, '/console/marktpartner', 'the Marktpartner page');
  const queue = page.getByRole('table', { name: 'Vormerkungen zum Nachversand' });
  // The sync pre-lists both streams we send to a new partner; the PARTIN
  // entry is the one deleted.
  const entry = queue.getByRole('row').filter({ hasText: PARTNER_NAME }).filter({ hasText: 'PARTIN an VNB' });
  await visible(entry, `the Nachversand entry of ${PARTNER_NAME}`);
  await shot(page, '07-marktpartner');
  page.once('dialog', (d) => d.accept());
  await entry.first().getByRole('button', { name: 'Löschen' }).click();
  await visible(page.getByRole('status').filter({ hasText: 'Erledigt.' }), 'the notice that the entry was deleted');
  await until(page, (name) => ![...document.querySelectorAll('#seite tr')].some(
    (r) => r.closest('table')?.querySelector('caption')?.textContent.includes('Nachversand') &&
      r.textContent.includes(name) && r.textContent.includes('PARTIN an VNB')),
  PARTNER_NAME, 'the deleted entry to leave the Nachversand queue', 30_000);
  await page.getByRole('link', { name: 'Nach letztem Kontakt ordnen' }).click();
  await page.waitForURL((u) => u.searchParams.get('ordnung') === 'kontakt');

  log(`${S}: Antworten and Kalkulation`);
  await nav(page, 'Antworten').click();
  await visible(page.getByRole('heading', { level: 1, name: 'Antworten' }), 'the Antworten page');
  const reply = page.getByRole('row').filter({ has: page.getByRole('rowheader', { name: 'Rueckfrage Ansprechpartner' }) });
  await visible(reply, "the partner's reply of this morning");
  const replyText = await reply.innerText();
  check(replyText.includes(PARTNER_NAME) && replyText.includes('ohne Referenz'),
    `the reply row "${replyText}" does not name ${PARTNER_NAME} and its assessment "ohne Referenz"`);
  await shot(page, '08-antworten');
  await nav(page, 'Kalkulation').click();
  await visible(page.getByRole('heading', { level: 1, name: 'Kalkulation' }), 'the Kalkulation page');
  await page.getByLabel('Von').fill(CALC_FROM);
  await page.getByLabel('Bis').fill(DST_DAY);
  await page.getByRole('button', { name: 'Berechnen' }).click();
  await page.waitForURL((u) => u.searchParams.get('bis') === DST_DAY);
  const [y, m, d] = DST_DAY.split('-');
  const calcRow = page.getByRole('row').filter({ has: page.getByRole('rowheader', { name: `${d}.${m}.${y}`, exact: true }) });
  await visible(calcRow.getByText('Preise fehlen'), `the missing prices flagged on ${DST_DAY}`);
  const calcText = await calcRow.innerText();
  // The demo portfolio has two control areas: 12 quarter-hours each.
  check(calcText.includes('Spot 24'), `the row of ${DST_DAY} does not count 2 x 12 missing spot prices: ${calcText}`);
  check(await page.locator('svg.chart').count() === 2, 'the Kalkulation page has not its two charts');
  const csv = await page.request.get(BASE + await page.getByRole('link', { name: 'CSV herunterladen' }).getAttribute('href'));
  check(csv.status() === 200 && (await csv.text()).includes('Tag;Kundenmenge (kWh)'), `the CSV download answered ${csv.status()}`);
  await shot(page, '09-kalkulation');

  log(`${S}: keyboard: the skip link leads to the content`);
  await page.keyboard.press('Tab');
  check(await page.evaluate(() => document.activeElement?.textContent) === 'Zum Inhalt springen', 'the first Tab does not reach the skip link');

  log(`${S}: sign out`);
  await collectSecrets(context);
  await page.getByRole('button', { name: 'Abmelden' }).click();
  await atPath(page, '/console/anmelden', 'the sign-in page after signing out');
  await visible(page.getByText('Sie wurden abgemeldet.'), 'the sign-out notice');
  const after = await page.request.get(`${BASE}/v1/console/summary`);
  check(after.status() === 401, `the console API answered ${after.status()} after the sign-out, want 401`);
  await checkClean(context, rec, S);
  await context.close();
}

const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
try {
  await outsider(browser);
  await operator(browser);
} finally {
  await browser.close();
  process.stdout.write(`SECRETS ${[...secrets].join(' ')}\n`);
}
log('all scenarios passed');
