// End-to-end test of the employees' web portal in a real browser: npm
// playwright-core drives Debian's Chromium against a running `schedbridge
// serve`, a real OpenID Connect provider (idp.mjs) and maildev. The Go test
// cmd/schedbridge/portal_e2e_test.go (TestPortalBrowser) starts all of them
// on loopback, seeds the employees and runs this script; `make screenshots`
// runs the same test with the screenshots going to docs/screenshots.
//
// Environment:
//   BASE_URL        the portal's origin, http://localhost:<port>
//   MAILDEV_API     maildev's REST API, http://127.0.0.1:<port>/api
//   SCREENSHOT_DIR  where the full-page PNGs go
//   CHROMIUM        the browser binary (default /usr/bin/chromium)
//   STAFF_LOGIN, STAFF_NAME  the employee who signs in at the IdP
//   LINK_EMAIL, LINK_NAME    the new hire who signs in by magic link
//   COOKIE_PREFIX   the cookies' name prefix (default "__Host-")
//
// It prints one line per step, and at the end one line
// "SECRETS <value> ..." with every session id, CSRF token, login-flow token
// and magic-link code the browser held, so that the Go test can check that
// none of them reached the server's log. It exits non-zero on the first
// failed expectation, with a message saying what was expected.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

import { atPath as atPathOf, check, log, need, visible } from './e2e-lib.mjs';
import { importPackage } from './npm.mjs';

const { chromium } = await importPackage('playwright-core');

const BASE = need('BASE_URL').replace(/\/+$/, '');
const atPath = (page, path, what) => atPathOf(page, BASE, path, what);
const MAILDEV_API = need('MAILDEV_API').replace(/\/+$/, '');
const SCREENSHOT_DIR = need('SCREENSHOT_DIR');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const STAFF_LOGIN = need('STAFF_LOGIN');
const STAFF_NAME = need('STAFF_NAME');
const LINK_EMAIL = need('LINK_EMAIL');
const LINK_NAME = need('LINK_NAME');
const PREFIX = process.env.COOKIE_PREFIX ?? '__Host-';
const SESSION = `${PREFIX}sb_session`;
const CSRF = `${PREFIX}sb_csrf`;
const FLOW = `${PREFIX}sb_login`;
const PORTAL_HOST = new URL(BASE).host;

mkdirSync(SCREENSHOT_DIR, { recursive: true });

// Every secret the browser held; printed at the end for the log check.
const secrets = new Set();

async function shot(page, name) {
  await page.screenshot({ path: join(SCREENSHOT_DIR, name), fullPage: true });
  log(`screenshot ${name}`);
}

// open starts a fresh context: no cookies, a German locale, and a record of
// every request URL, Location header and portal-page error.
async function open(browser) {
  const context = await browser.newContext({
    viewport: { width: 1280, height: 900 },
    locale: 'de-DE',
    timezoneId: 'Europe/Berlin',
  });
  context.setDefaultTimeout(10_000);
  const rec = { urls: [], locations: [], requests: [], errors: [] };
  context.on('request', (r) => {
    rec.urls.push(r.url());
    rec.requests.push(r);
  });
  context.on('response', (r) => {
    const loc = r.headers().location;
    if (loc) rec.locations.push(new URL(loc, r.url()).href);
  });
  const page = await context.newPage();
  await page.setViewportSize({ width: 1280, height: 900 });
  page.on('pageerror', (err) => rec.errors.push(`uncaught: ${err.message}`));
  page.on('console', (m) => {
    // Failed fetches (409, 401) are expected in the scenarios and logged by
    // Chromium as "Failed to load resource"; anything else on a portal page,
    // a Content-Security-Policy violation say, is a defect.
    if (m.type() === 'error' && page.url().startsWith(BASE) && !m.text().startsWith('Failed to load resource')) {
      rec.errors.push(`console: ${m.text()}`);
    }
  });
  return { context, page, rec };
}

async function portalCookies(context) {
  const byName = {};
  for (const c of await context.cookies(BASE)) byName[c.name] = c;
  for (const name of [SESSION, CSRF, FLOW]) {
    if (byName[name]?.value) secrets.add(byName[name].value);
  }
  return byName;
}

// checkURLs: no secret in any URL the browser asked for or was redirected
// to, and no code in a query toward the portal (the authorization code
// travels in the form_post body, the magic-link code in the fragment, which
// browsers never send).
async function checkURLs(context, rec, scenario) {
  await portalCookies(context);
  for (const u of [...rec.urls, ...rec.locations]) {
    for (const s of secrets) {
      check(!u.includes(s), `${scenario}: the URL ${u} contains a session id, CSRF token or code the browser held`);
    }
    const parsed = new URL(u);
    if (parsed.host === PORTAL_HOST) {
      check(!/(^|[?&])code=/.test(parsed.search.slice(1)), `${scenario}: the portal URL ${u} carries a code in its query`);
    }
  }
  check(rec.errors.length === 0, `${scenario}: errors on portal pages:\n${rec.errors.join('\n')}`);
  log(`${scenario}: ${rec.urls.length} requests and ${rec.locations.length} redirects carry no secret`);
}

// Dates relative to the wall clock, which the server uses too: leave two
// months ahead on a Monday, so that nothing in the past or at a year's edge
// interferes; the sick leave starts today.
function isoDate(d) {
  return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
}
function deDate(d) {
  return `${String(d.getDate()).padStart(2, '0')}.${String(d.getMonth() + 1).padStart(2, '0')}.${d.getFullYear()}`;
}
function addDays(d, n) {
  const x = new Date(d.getFullYear(), d.getMonth(), d.getDate());
  x.setDate(x.getDate() + n);
  return x;
}
const today = addDays(new Date(), 0);
let leaveStart = addDays(today, 60);
while (leaveStart.getDay() !== 1) leaveStart = addDays(leaveStart, 1); // Monday
const leaveEnd = addDays(leaveStart, 4); // Friday
const overlapStart = addDays(leaveStart, 2); // Wednesday
const overlapEnd = addDays(leaveStart, 8); // next Tuesday

function nav(page, label) {
  return page.getByRole('navigation', { name: 'Hauptnavigation' }).getByRole('link', { name: label, exact: true });
}

async function staffScenario(browser) {
  const { context, page, rec } = await open(browser);
  const S = 'sso';

  log(`${S}: /portal/ without a session`);
  await page.goto(`${BASE}/portal/`);
  await atPath(page, '/portal/anmelden', 'the redirect to the sign-in page');
  await visible(page.getByRole('heading', { level: 1, name: 'Anmelden' }), 'the heading "Anmelden"');
  await visible(page.getByRole('heading', { name: 'Für Beschäftigte' }), 'the staff section of the sign-in page');
  await shot(page, '01-anmelden.png');

  log(`${S}: sign in at the identity provider as ${STAFF_LOGIN}`);
  await page.getByRole('link', { name: 'Mit Firmenkonto anmelden' }).click();
  await visible(page.getByLabel('Login'), "the identity provider's login form");
  check(new URL(page.url()).host !== PORTAL_HOST, `the login form is served by the portal (${page.url()}), not the IdP`);
  const flow = (await portalCookies(context))[FLOW];
  check(flow, `no ${FLOW} cookie binds the sign-in to this browser`);
  check(flow.httpOnly && flow.secure && flow.sameSite === 'None',
    `${FLOW}: httpOnly ${flow.httpOnly}, secure ${flow.secure}, sameSite ${flow.sameSite}; want HttpOnly, Secure, SameSite=None (it must survive the cross-site form_post)`);
  await page.getByLabel('Login').fill(STAFF_LOGIN);
  await page.getByLabel('Password').fill('beliebig');
  await page.getByRole('button', { name: 'Sign in' }).click();

  await atPath(page, '/portal/', 'the overview after the form_post callback');
  await visible(page.getByText(`Guten Tag, ${STAFF_NAME}`), `the greeting "Guten Tag, ${STAFF_NAME}"`);
  await visible(page.getByRole('heading', { level: 1, name: 'Übersicht' }), 'the heading "Übersicht"');
  await shot(page, '02-uebersicht.png');

  const callbacks = rec.requests.filter((r) => r.url().startsWith(`${BASE}/portal/anmelden/sso/callback`));
  check(callbacks.length === 1, `${callbacks.length} requests to the SSO callback, want 1`);
  const cb = callbacks[0];
  check(cb.method() === 'POST', `the SSO callback was a ${cb.method()}, want the form_post POST`);
  check(new URL(cb.url()).search === '', `the SSO callback URL ${cb.url()} has a query`);
  const body = new URLSearchParams(cb.postData() ?? '');
  check(body.get('code') && body.get('state'), 'the form_post body carries no code and state');
  const origin = (await cb.allHeaders()).origin ?? '';
  check(origin && origin !== BASE, `the form_post came from origin "${origin}"; want the IdP's, another site`);
  secrets.add(body.get('code'));

  const cookies = await portalCookies(context);
  const session = cookies[SESSION];
  check(session, `no ${SESSION} cookie after the sign-in`);
  check(session.httpOnly && session.secure && session.sameSite === 'Lax',
    `${SESSION}: httpOnly ${session.httpOnly}, secure ${session.secure}, sameSite ${session.sameSite}; want HttpOnly, Secure, SameSite=Lax`);
  check(session.path === '/' && !session.domain.startsWith('.'), `${SESSION}: path ${session.path}, domain ${session.domain}`);
  const csrf = cookies[CSRF];
  check(csrf && csrf.secure && !csrf.httpOnly && csrf.sameSite === 'Lax',
    `${CSRF}: ${JSON.stringify(csrf)}; want Secure, SameSite=Lax and readable by the page's script`);
  check(!cookies[FLOW], `${FLOW} is still set after the callback`);

  log(`${S}: Urlaub ${isoDate(leaveStart)} to ${isoDate(leaveEnd)}`);
  await nav(page, 'Urlaub').click();
  await atPath(page, '/portal/urlaub', 'the Urlaub page');
  await visible(page.getByText('Sie haben noch keinen Urlaub beantragt.'), 'the empty leave list');
  await page.getByLabel('Art').selectOption({ label: 'Erholungsurlaub' });
  await page.getByLabel('Erster Urlaubstag').fill(isoDate(leaveStart));
  await page.getByLabel('Letzter Urlaubstag').fill(isoDate(leaveEnd));
  await page.getByLabel('Bemerkung (optional)').fill('Skiurlaub');
  await page.getByRole('button', { name: 'Urlaub beantragen' }).click();
  await visible(page.getByRole('status').filter({ hasText: 'Ihre Angaben wurden gespeichert.' }), 'the notice "Ihre Angaben wurden gespeichert."');
  const leaveTable = page.getByRole('table', { name: 'Ihre Urlaubsanträge' });
  const leaveRow = leaveTable.getByRole('row').filter({ hasText: deDate(leaveStart) });
  await visible(leaveRow, `a row from ${deDate(leaveStart)} in the table "Ihre Urlaubsanträge"`);
  const leaveText = await leaveRow.innerText();
  for (const want of ['Erholungsurlaub', deDate(leaveEnd), 'Beantragt', 'Skiurlaub']) {
    check(leaveText.includes(want), `the leave row "${leaveText}" lacks "${want}"`);
  }
  await shot(page, '03-urlaub.png');

  log(`${S}: overlapping Urlaub ${isoDate(overlapStart)} to ${isoDate(overlapEnd)}`);
  await page.getByLabel('Erster Urlaubstag').fill(isoDate(overlapStart));
  await page.getByLabel('Letzter Urlaubstag').fill(isoDate(overlapEnd));
  await page.getByRole('button', { name: 'Urlaub beantragen' }).click();
  await visible(page.getByRole('alert').filter({ hasText: 'Der Zeitraum überschneidet sich mit einem bestehenden Eintrag.' }),
    'the conflict alert "Der Zeitraum überschneidet sich mit einem bestehenden Eintrag."');
  check(await leaveTable.getByRole('row').count() === 2, 'the overlapping request was added to the table (want a header and one row)');

  log(`${S}: Krankmeldung from ${isoDate(today)}`);
  await nav(page, 'Krankmeldung').click();
  await atPath(page, '/portal/krankmeldung', 'the Krankmeldung page');
  await page.getByLabel('Erster Krankheitstag').fill(isoDate(today));
  await page.getByLabel('Voraussichtlich letzter Krankheitstag').fill(isoDate(addDays(today, 2)));
  await page.getByLabel('Arbeitsunfähigkeitsbescheinigung liegt vor').check();
  await page.getByLabel('Bemerkung (optional)').fill('Grippe');
  await page.getByRole('button', { name: 'Krankmeldung senden' }).click();
  await visible(page.getByRole('status').filter({ hasText: 'Ihre Angaben wurden gespeichert.' }), 'the notice after the sick leave report');
  const sickRow = page.getByRole('table', { name: 'Ihre Krankmeldungen' }).getByRole('row').filter({ hasText: deDate(today) });
  await visible(sickRow, `a row from ${deDate(today)} in the table "Ihre Krankmeldungen"`);
  const sickText = await sickRow.innerText();
  for (const want of [deDate(addDays(today, 2)), 'ja', 'Grippe']) {
    check(sickText.includes(want), `the sick leave row "${sickText}" lacks "${want}"`);
  }
  await shot(page, '04-krankmeldung.png');

  log(`${S}: Bescheinigungen: Zwischenzeugnis`);
  await nav(page, 'Bescheinigungen').click();
  await atPath(page, '/portal/bescheinigungen', 'the Bescheinigungen page');
  await page.getByLabel('Art').selectOption({ label: 'Zwischenzeugnis' });
  await page.getByLabel('Zweck (optional)').fill('Bewerbung intern');
  await page.getByLabel('Sprache').selectOption({ label: 'Deutsch' });
  await page.getByRole('button', { name: 'Bescheinigung anfordern' }).click();
  await visible(page.getByRole('status').filter({ hasText: 'Ihre Angaben wurden gespeichert.' }), 'the notice after the certificate request');
  const certRow = page.getByRole('table', { name: 'Ihre Anforderungen' }).getByRole('row').filter({ hasText: 'Zwischenzeugnis' });
  await visible(certRow, 'a Zwischenzeugnis row in the table "Ihre Anforderungen"');
  const certText = await certRow.innerText();
  for (const want of ['Beantragt', 'Bewerbung intern', 'Deutsch', deDate(today)]) {
    check(certText.includes(want), `the certificate row "${certText}" lacks "${want}"`);
  }
  await shot(page, '05-bescheinigungen.png');

  log(`${S}: Vergütung`);
  await nav(page, 'Vergütung').click();
  await atPath(page, '/portal/verguetung', 'the Vergütung page');
  const compTable = page.getByRole('table', { name: 'Ihre Vergütung' });
  const base = compTable.getByRole('row').filter({ hasText: 'Grundgehalt' });
  await visible(base, 'the Grundgehalt row');
  const baseText = await base.innerText();
  check(baseText.includes('5.200,00 €') && baseText.includes('monatlich'), `the Grundgehalt row reads "${baseText}", want 5.200,00 € monatlich`);
  const bonusText = await compTable.getByRole('row').filter({ hasText: 'Jahresbonus' }).innerText();
  check(bonusText.includes('verborgen') && !/\d/.test(bonusText), `the Jahresbonus row reads "${bonusText}", want it masked ("verborgen", no digits)`);
  const html = await page.content();
  check(!html.includes('6.400') && !html.includes('6400') && !html.includes('640000'), 'the page carries the masked bonus amount');
  await shot(page, '06-verguetung.png');

  // The stolen-cookie test needs a cookie that works: a second context with
  // only a copy of the session cookie gets in while the session lives.
  const replay = async () => {
    const other = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    other.setDefaultTimeout(10_000);
    // Exactly as the browser stored it (a host-only cookie for path /).
    const { name, value, domain, path, expires, httpOnly, secure, sameSite } = session;
    await other.addCookies([{ name, value, domain, path, expires, httpOnly, secure, sameSite }]);
    const p = await other.newPage();
    let sent = false;
    p.on('request', async (r) => {
      if (r.url() === `${BASE}/portal/`) sent = ((await r.allHeaders()).cookie ?? '').includes(session.value);
    });
    await p.goto(`${BASE}/portal/`);
    await p.waitForLoadState('load');
    const landed = new URL(p.url()).pathname;
    await other.close();
    check(sent, 'the replayed session cookie was not sent with the request');
    return landed;
  };
  check(await replay() === '/portal/', 'a copy of the live session cookie did not open the overview');

  log(`${S}: Abmelden`);
  await nav(page, 'Abmelden').click();
  await atPath(page, '/portal/abmelden', 'the Abmelden page');
  await shot(page, '07-abmelden.png');
  await portalCookies(context);
  await page.getByRole('button', { name: 'Jetzt abmelden' }).click();
  await atPath(page, '/portal/anmelden', 'the sign-in page after signing out');
  await visible(page.getByRole('status').filter({ hasText: 'Sie wurden abgemeldet.' }), 'the notice "Sie wurden abgemeldet."');
  check(!(await portalCookies(context))[SESSION], `${SESSION} is still set after signing out`);
  await page.goto(`${BASE}/portal/`);
  await atPath(page, '/portal/anmelden', 'the redirect to the sign-in page after signing out');
  check(await replay() === '/portal/anmelden', 'the old session cookie still opens the portal after signing out');

  await checkURLs(context, rec, S);
  await context.close();
}

// waitMail polls maildev for the newest mail to addr.
async function waitMail(addr) {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const res = await fetch(`${MAILDEV_API}/email`);
    check(res.ok, `maildev answered ${res.status}`);
    const mails = (await res.json()).filter((m) => (m.to ?? []).some((t) => t.address.toLowerCase() === addr.toLowerCase()));
    if (mails.length) return mails[mails.length - 1];
    check(Date.now() < deadline, `no mail to ${addr} within 15 s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function linkScenario(browser) {
  const { context, page, rec } = await open(browser);
  const S = 'magic-link';

  log(`${S}: request a link for ${LINK_EMAIL}`);
  await page.goto(`${BASE}/portal/anmelden`);
  await page.getByLabel('E-Mail-Adresse').fill(LINK_EMAIL);
  await page.getByRole('button', { name: 'Anmeldelink senden' }).click();
  await visible(page.getByRole('status').filter({ hasText: 'Wenn die Adresse bei uns hinterlegt ist' }), 'the status text after requesting the link');

  const mail = await waitMail(LINK_EMAIL);
  const link = /https?:\/\/\S+#code=[A-Za-z0-9_-]+/.exec(mail.text ?? '')?.[0];
  check(link, `the mail "${mail.subject}" has no link with #code=: ${mail.text}`);
  check(link.startsWith(`${BASE}/portal/anmelden/link#code=`), `the link ${link} does not point to ${BASE}/portal/anmelden/link`);
  secrets.add(new URL(link).hash.slice('#code='.length));
  log(`${S}: mail "${mail.subject}" received`);

  await page.goto(link);
  await atPath(page, '/portal/', 'the overview after redeeming the link');
  await visible(page.getByText(`Guten Tag, ${LINK_NAME}`), `the greeting "Guten Tag, ${LINK_NAME}"`);
  check(!page.url().includes('#'), `the address bar still has a fragment: ${page.url()}`);
  check(await page.evaluate(() => location.hash) === '', 'location.hash is not empty');
  await visible(page.getByText('Angemeldet per Anmeldelink: Gehaltsangaben werden nicht angezeigt.'), 'the magic-link hint in the header');
  const redeems = rec.requests.filter((r) => r.url() === `${BASE}/api/auth/magic-link/redeem`);
  check(redeems.length === 1 && redeems[0].method() === 'POST', `${redeems.length} redeem requests, want one POST`);

  log(`${S}: Vergütung is masked`);
  await nav(page, 'Vergütung').click();
  await atPath(page, '/portal/verguetung', 'the Vergütung page');
  await visible(page.getByText('Bei einer Anmeldung per Link werden Beträge nicht angezeigt.'), 'the mask note of a magic-link session');
  const amounts = await page.getByRole('table', { name: 'Ihre Vergütung' }).locator('td.amount').allInnerTexts();
  check(amounts.length >= 3, `${amounts.length} amount cells, want the component and two totals`);
  for (const a of amounts) {
    check(a.includes('verborgen') && !/\d/.test(a), `an amount cell reads "${a}", want it masked`);
  }
  check(!/\d[.\d]*,\d\d\s*€/.test(await page.locator('main').innerText()), 'the page shows an amount in euros');
  await shot(page, '08-verguetung-link.png');

  await checkURLs(context, rec, S);
  await context.close();

  log(`${S}: the used link in a new browser`);
  const again = await open(browser);
  await again.page.goto(link);
  await visible(again.page.getByRole('alert').filter({ hasText: 'ungültig, abgelaufen oder wurde bereits verwendet' }),
    'the alert "Der Anmeldelink ist ungültig, abgelaufen oder wurde bereits verwendet."');
  check(new URL(again.page.url()).pathname === '/portal/anmelden/link', `the used link went on to ${again.page.url()}`);
  check(!(await portalCookies(again.context))[SESSION], 'the used link gave a session');
  await visible(again.page.getByRole('link', { name: 'Neuen Anmeldelink anfordern' }), 'the link to request a new one');
  await checkURLs(again.context, again.rec, `${S} (reused)`);
  await again.context.close();
}

const browser = await chromium.launch({
  executablePath: CHROMIUM,
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--lang=de-DE'],
  // The date fields take their format from the browser process's locale.
  env: { ...process.env, LANG: 'de_DE.UTF-8', LANGUAGE: 'de' },
});
let failed = false;
try {
  log(`chromium ${browser.version()} against ${BASE}`);
  await staffScenario(browser);
  await linkScenario(browser);
  log('all scenarios passed');
} catch (err) {
  failed = true;
  process.stderr.write(`${err.stack ?? err}\n`);
} finally {
  await browser.close();
  process.stdout.write(`SECRETS ${[...secrets].join(' ')}\n`);
}
process.exit(failed ? 1 : 0);
