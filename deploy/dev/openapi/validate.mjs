// Validates an OpenAPI document with @apidevtools/swagger-parser (schema of
// the OpenAPI version, then references) and prints one JSON line:
// {"errors": [...]}, empty when the document is valid. It exits 0 either way,
// so that the caller tells a refused document from a script that failed.
//
// Usage: NODE_PATH=<node_modules> node validate.mjs openapi.json
import { importPackage } from '../portal/npm.mjs';

const { default: SwaggerParser } = await importPackage('@apidevtools/swagger-parser');
const file = process.argv[2];
if (!file) {
  console.error('usage: node validate.mjs FILE');
  process.exit(2);
}
const errors = [];
try {
  await SwaggerParser.validate(file);
} catch (err) {
  // A schema failure lists each problem in details (Ajv's errors); a
  // reference failure is one message.
  for (const d of err.details ?? []) {
    errors.push(`${d.instancePath || '/'}: ${d.message}${d.params ? ' ' + JSON.stringify(d.params) : ''}`);
  }
  if (errors.length === 0) errors.push(err.message);
}
console.log(JSON.stringify({ errors }));
