// Shared by idp.mjs and e2e.mjs.
import { existsSync, readFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { pathToFileURL } from 'node:url';

// importPackage imports an npm package from next to this file or, failing
// that, from a directory in NODE_PATH: the tests install the packages into a
// cache directory outside the repository, and ES module imports, unlike
// require, ignore NODE_PATH.
export async function importPackage(name) {
  try {
    return await import(name);
  } catch (err) {
    if (err.code !== 'ERR_MODULE_NOT_FOUND') throw err;
  }
  for (const dir of (process.env.NODE_PATH ?? '').split(delimiter).filter(Boolean)) {
    const pkgFile = join(dir, name, 'package.json');
    if (!existsSync(pkgFile)) continue;
    const pkg = JSON.parse(readFileSync(pkgFile, 'utf8'));
    const dot = typeof pkg.exports === 'object' ? (pkg.exports['.'] ?? pkg.exports) : pkg.exports;
    const entry = (typeof dot === 'string' ? dot : dot?.import ?? dot?.default) ?? pkg.main ?? 'index.js';
    return import(pathToFileURL(join(dir, name, entry)).href);
  }
  throw new Error(`cannot find npm package ${name} (NODE_PATH=${process.env.NODE_PATH ?? ''}): run \`make test-deps\``);
}
