// The official `@anthropic-ai/sdk` npm client against Tandem's Anthropic-compatible Messages
// API, driven by messages_responses_test.py (which makes the assertions):
//
//   node anthropic_messages_client.mjs '{"op": "batch" | "count" | "loop", "base_url":
//                                        "http://127.0.0.1:P", "requests": [{...}, ...]}'
//
//  - batch: each request through client.messages.create; a streamed one (request.stream)
//    through client.messages.stream(...).finalMessage(), the SDK's own reassembly of the
//    events, with the raw events too. Prints [message | {"error": {...}}, ...].
//  - count: each request through client.messages.countTokens. Prints [{"input_tokens"}, ...].
//  - loop: the agent loop on requests[0]: a tool_use (the request's tool_choice), the tool's
//    result sent back as a tool_result block, then the final answer with tool_choice none.
//    Prints {"first": message, "second": message}.
//
// The key goes as `x-api-key` ($TANDEM_API_KEY, as the SDK sends it); HTTPS trusts
// $NODE_EXTRA_CA_CERTS. The package is not in the repository: tools/setup.sh installs it
// into $TANDEM_NPM_DIR (default ~/.cache/tandem-npm).
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

const npmDir = process.env.TANDEM_NPM_DIR || path.join(os.homedir(), '.cache', 'tandem-npm');
const require = createRequire(path.join(npmDir, 'package.json'));
const Anthropic = require('@anthropic-ai/sdk').default;

const args = JSON.parse(process.argv[2]);
const apiKey = process.env.TANDEM_API_KEY || 'unused';
const client = new Anthropic({ baseURL: args.base_url, apiKey, maxRetries: 0, timeout: 60_000 });

async function one(request) {
  try {
    if (!request.stream) return await client.messages.create(request);
    const { stream, ...rest } = request;
    const events = [];
    const runner = client.messages.stream(rest);
    runner.on('streamEvent', (event) => events.push(event));
    const message = await runner.finalMessage();
    return { ...message, events };
  } catch (e) {
    if (e instanceof Anthropic.APIError) {
      return { error: { status: e.status, body: e.error } };
    }
    throw e;
  }
}

async function loop(request) {
  const first = await client.messages.create(request);
  const results = first.content.filter((b) => b.type === 'tool_use').map((b) => (
    { type: 'tool_result', tool_use_id: b.id, content: '{"temperature": 21}' }));
  const messages = [...request.messages, { role: 'assistant', content: first.content },
                    { role: 'user', content: results }];
  const second = await client.messages.create(
      { ...request, messages, tool_choice: { type: 'none' } });
  return { first, second };
}

let out;
if (args.op === 'batch') {
  out = [];
  for (const r of args.requests) out.push(await one(r));
} else if (args.op === 'count') {
  out = [];
  for (const r of args.requests) out.push(await client.messages.countTokens(r));
} else {
  out = await loop(args.requests[0]);
}
console.log(JSON.stringify(out));
