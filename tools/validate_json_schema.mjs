// Validates JSON instances against JSON Schemas with ajv (draft 2020-12 dialect, formats from
// ajv-formats), independently of Tandem's grammar engine: the judge of the constrained-output
// validity tests (issue 27). Neither package is in the repository: tools/setup.sh installs them
// into $TANDEM_NPM_DIR (default ~/.cache/tandem-npm).
//
//   node tools/validate_json_schema.mjs < cases.jsonl
//
// Each input line is an object {"schema": S, "instance": V} or {"schema": S, "text": T} (T: the
// generated text, which must parse as JSON first). Prints one line per input line, "valid" or
// "invalid: " and the reasons, then "N valid, M invalid"; exits 1 when any line is invalid (a
// line that is not such an object, or a schema ajv refuses, counts as invalid).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const npmDir = process.env.TANDEM_NPM_DIR || path.join(os.homedir(), '.cache', 'tandem-npm');
const modules = path.join(npmDir, 'node_modules');

async function load(file) {
  const module = await import(pathToFileURL(path.join(modules, file)).href);
  const exported = module.default;
  return exported && exported.default ? exported.default : exported;
}

const Ajv2020 = await load('ajv/dist/2020.js');
const addFormats = await load('ajv-formats/dist/index.js');
// strict: false: schemas from clients may omit `type` beside type-specific keywords.
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);

const validators = new Map();  // schema text -> compiled validator

function check(line) {
  let item;
  try {
    item = JSON.parse(line);
  } catch (e) {
    return `not a JSON line: ${e.message}`;
  }
  if (item === null || typeof item !== 'object' || !('schema' in item) ||
      !('instance' in item || 'text' in item)) {
    return 'a line must be {"schema": ..., "instance": ...} or {"schema": ..., "text": ...}';
  }
  let instance = item.instance;
  if ('text' in item) {
    try {
      instance = JSON.parse(item.text);
    } catch (e) {
      return `the text is not JSON: ${e.message}`;
    }
  }
  const key = JSON.stringify(item.schema);
  let validate = validators.get(key);
  if (!validate) {
    try {
      validate = ajv.compile(item.schema);
    } catch (e) {
      return `ajv refuses the schema: ${e.message}`;
    }
    validators.set(key, validate);
  }
  if (validate(instance)) return null;
  return ajv.errorsText(validate.errors, { separator: '; ' });
}

const lines = fs.readFileSync(0, 'utf8').split('\n').filter((l) => l.trim() !== '');
let valid = 0;
let invalid = 0;
for (const line of lines) {
  const problem = check(line);
  if (problem === null) {
    valid++;
    console.log('valid');
  } else {
    invalid++;
    console.log(`invalid: ${problem}`);
  }
}
console.log(`${valid} valid, ${invalid} invalid`);
process.exit(invalid === 0 ? 0 : 1);
