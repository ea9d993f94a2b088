// The official `openai` npm client's Responses API (client.responses) against Tandem's
// stateless /v1/responses, driven by messages_responses_test.py (which makes the
// assertions):
//
//   node openai_responses_client.mjs '{"op": "batch" | "loop", "base_url": ".../v1",
//                                      "requests": [{...}, ...]}'
//
//  - batch: each request through client.responses.create; a streamed one (request.stream)
//    through client.responses.stream(...).finalResponse(), the SDK's own accumulation of the
//    events, with the raw events too. Each reply carries the SDK's output_text. Prints
//    [response | {"error": {...}}, ...].
//  - loop: the agent loop on requests[0]: a function_call, its function_call_output sent
//    back after the call items as the SDK returned them, then the final answer with
//    tool_choice "none". Prints {"first": response, "second": response}.
//
// HTTPS trusts $NODE_EXTRA_CA_CERTS; the key is $TANDEM_API_KEY. The package is not in the
// repository: tools/setup.sh installs it into $TANDEM_NPM_DIR (default ~/.cache/tandem-npm).
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

const npmDir = process.env.TANDEM_NPM_DIR || path.join(os.homedir(), '.cache', 'tandem-npm');
const require = createRequire(path.join(npmDir, 'package.json'));
const OpenAI = require('openai').default;

const args = JSON.parse(process.argv[2]);
const apiKey = process.env.TANDEM_API_KEY || 'unused';
const client = new OpenAI({ baseURL: args.base_url, apiKey, maxRetries: 0, timeout: 60_000 });

async function one(request) {
  try {
    if (!request.stream) {
      const response = await client.responses.create(request);
      return { ...response, output_text: response.output_text };
    }
    const { stream, ...rest } = request;
    const events = [];
    const runner = client.responses.stream(rest);
    runner.on('event', (event) => events.push(event));
    const response = await runner.finalResponse();
    return { ...response, output_text: response.output_text, events };
  } catch (e) {
    if (e instanceof OpenAI.APIError) {
      return { error: { status: e.status, error: e.error, message: e.message } };
    }
    throw e;
  }
}

async function loop(request) {
  const first = await client.responses.create(request);
  const input = [...request.input, ...first.output];
  for (const item of first.output) {
    if (item.type === 'function_call') {
      input.push({ type: 'function_call_output', call_id: item.call_id,
                   output: '{"temperature": 21}' });
    }
  }
  const second = await client.responses.create({ ...request, input, tool_choice: 'none' });
  return { first, second: { ...second, output_text: second.output_text } };
}

let out;
if (args.op === 'batch') {
  out = [];
  for (const r of args.requests) out.push(await one(r));
} else {
  out = await loop(args.requests[0]);
}
console.log(JSON.stringify(out));
