// What the browser tests (portal/e2e.mjs, console/e2e.mjs) share: reading
// their environment, one line per step, and expectations that fail with a
// message saying what the page should have shown.

export function need(name) {
  const v = process.env[name];
  if (!v) throw new Error(`e2e: the environment variable ${name} is not set`);
  return v;
}

export function log(msg) {
  process.stdout.write(`e2e: ${msg}\n`);
}

export function check(cond, msg) {
  if (!cond) throw new Error(`e2e: ${msg}`);
}

// visible waits for a locator and turns Playwright's timeout into a message
// that says what the page should have shown.
export async function visible(locator, what, timeout) {
  try {
    await locator.first().waitFor({ state: 'visible', timeout });
  } catch (err) {
    throw new Error(`e2e: expected ${what}: ${err.message.split('\n')[0]}`);
  }
}

// atPath waits until the page is at path on base.
export async function atPath(page, base, path, what) {
  try {
    await page.waitForURL((u) => u.origin === base && u.pathname === path);
  } catch (err) {
    throw new Error(`e2e: expected ${what} (${base}${path}), the browser is at ${page.url()}`);
  }
}
