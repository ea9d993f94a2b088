// The official `openai` npm client against Tandem's OpenAI-compatible HTTP API, one operation
// per run, driven by openai_http_test.py (which makes the assertions):
//
//   node openai_http_client.mjs '{"op": "chat", "base_url": "http://127.0.0.1:P/v1",
//                                 "request": {...}}'
//
// Prints one JSON line: the reply (op "chat" / "completion"; a streamed one as {"chunks":
// [...]}), {"error": {"status", "name", "error"}} for a refused request, the model list
// (op "models"), or {"chunks_read": N} (op "disconnect": reads N chunks of a stream, then
// aborts the HTTP request the way a client that goes away does).
//
// HTTPS: Node trusts the CA in $NODE_EXTRA_CA_CERTS.
//
// The package is not in the repository: tools/setup.sh installs it into $TANDEM_NPM_DIR
// (default ~/.cache/tandem-npm).
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

const npmDir = process.env.TANDEM_NPM_DIR || path.join(os.homedir(), '.cache', 'tandem-npm');
const require = createRequire(path.join(npmDir, 'package.json'));
const OpenAI = require('openai').default;

const args = JSON.parse(process.argv[2]);
// No retries: a 429 or 503 must reach the test as it was sent. The key: the run's
// ($TANDEM_API_KEY, sent as `Authorization: Bearer KEY`) unless the operation names one.
const apiKey = args.api_key ?? (process.env.TANDEM_API_KEY || 'unused');
const client = new OpenAI({ baseURL: args.base_url, apiKey, maxRetries: 0, timeout: 60_000 });

function create(request) {
  return args.endpoint === 'completions' ? client.completions.create(request)
                                         : client.chat.completions.create(request);
}

async function run() {
  switch (args.op) {
    case 'models':
      return (await client.models.list()).data;
    case 'model':
      return await client.models.retrieve(args.id);
    case 'generate': {
      const reply = await create(args.request);
      if (!args.request.stream) return reply;
      const chunks = [];
      for await (const chunk of reply) chunks.push(chunk);
      return { chunks };
    }
    case 'disconnect': {
      const stream = await create({ ...args.request, stream: true });
      let read = 0;
      for await (const chunk of stream) {
        if (++read >= args.chunks) break;
      }
      stream.controller.abort();
      return { chunks_read: read };
    }
    default:
      throw new Error(`unknown op ${args.op}`);
  }
}

try {
  console.log(JSON.stringify(await run()));
} catch (e) {
  if (e instanceof OpenAI.APIError) {
    console.log(JSON.stringify({ error: { status: e.status ?? null, name: e.constructor.name,
                                          error: e.error ?? null } }));
  } else {
    console.error(e);
    process.exit(1);
  }
}
