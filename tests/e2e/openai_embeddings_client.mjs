// The official `openai` npm client's `client.embeddings.create` against Tandem's
// POST /v1/embeddings, one request per run, driven by embeddings_test.py (which makes the
// assertions):
//
//   node openai_embeddings_client.mjs '{"base_url": "http://127.0.0.1:P/v1", "request": {...}}'
//
// Prints one JSON line: the response as the client returns it (with no encoding_format the
// client asks for base64 and decodes the vectors itself; with "float" or "base64" it returns
// them as sent), or {"error": {"status", "name", "error"}} for a refused request.
//
// HTTPS: Node trusts the CA in $NODE_EXTRA_CA_CERTS. The package is not in the repository:
// tools/setup.sh installs it into $TANDEM_NPM_DIR (default ~/.cache/tandem-npm).
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

const npmDir = process.env.TANDEM_NPM_DIR || path.join(os.homedir(), '.cache', 'tandem-npm');
const require = createRequire(path.join(npmDir, 'package.json'));
const OpenAI = require('openai').default;

const args = JSON.parse(process.argv[2]);
const apiKey = process.env.TANDEM_API_KEY || 'unused';
const client = new OpenAI({ baseURL: args.base_url, apiKey, maxRetries: 0, timeout: 60_000 });

try {
  console.log(JSON.stringify(await client.embeddings.create(args.request)));
} catch (e) {
  if (e instanceof OpenAI.APIError) {
    console.log(JSON.stringify({ error: { status: e.status ?? null, name: e.constructor.name,
                                          error: e.error ?? null } }));
  } else {
    console.error(e);
    process.exit(1);
  }
}
