// Validates Kubernetes objects against the OpenAPI schemas of a pinned Kubernetes release,
// compiled into the `kubernetes-models` npm package (v5.1.0: Kubernetes 1.27.1) and, for the
// Prometheus Operator's kinds, `@kubernetes-models/prometheus-operator`. Neither is in the
// repository: tools/setup.sh installs them into $TANDEM_NPM_DIR (default ~/.cache/tandem-npm).
//
//   node k8s_validate.mjs OBJECTS.json
//
// OBJECTS.json holds a list of objects (the rendered manifests). Prints one line per object,
// "valid KIND/NAME" or "invalid KIND/NAME: the schema's complaints" (an apiVersion or kind
// without a schema is invalid too, never skipped), then "N valid, M invalid"; exits 1 when
// any is invalid.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const npmDir = process.env.TANDEM_NPM_DIR || path.join(os.homedir(), '.cache', 'tandem-npm');
const modules = path.join(npmDir, 'node_modules');

// The file of the models of one apiVersion ("v1", "apps/v1", "monitoring.coreos.com/v1").
function modelsFile(apiVersion) {
  if (apiVersion.startsWith('monitoring.coreos.com/')) {
    return path.join(modules, '@kubernetes-models', 'prometheus-operator', apiVersion, 'index.js');
  }
  return path.join(modules, 'kubernetes-models', apiVersion, 'index.js');
}

async function modelOf(apiVersion, kind) {
  if (typeof apiVersion !== 'string' || typeof kind !== 'string') return null;
  const file = modelsFile(apiVersion);
  if (!fs.existsSync(file)) return null;
  const group = await import(pathToFileURL(file).href);
  return group[kind] || null;
}

async function check(object) {
  const name = `${object.kind}/${object.metadata?.name ?? '(no name)'}`;
  const Model = await modelOf(object.apiVersion, object.kind);
  if (Model === null) return `invalid ${name}: no schema for ${object.apiVersion} ${object.kind}`;
  try {
    new Model(object).validate();
    return `valid ${name}`;
  } catch (e) {
    return `invalid ${name}: ${e.message}`;
  }
}

if (!fs.existsSync(path.join(modules, 'kubernetes-models', 'package.json'))) {
  console.error(`kubernetes-models is not installed in ${npmDir}: run tools/setup.sh`);
  process.exit(2);
}
const objects = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
let valid = 0;
let invalid = 0;
for (const object of objects) {
  const line = await check(object);
  console.log(line);
  if (line.startsWith('valid ')) ++valid;
  else ++invalid;
}
console.log(`${valid} valid, ${invalid} invalid`);
process.exit(invalid === 0 ? 0 : 1);
