// The official `openai` npm client's tool calling against Tandem's HTTP API, driven by
// tool_calls_test.py (which makes the assertions):
//
//   node openai_tools_client.mjs '{"op": "batch" | "loop", "base_url": ".../v1",
//                                  "requests": [{...}, ...]}'
//
//  - batch: each request through client.chat.completions.create, in order; a streamed one
//    (request.stream) through client.chat.completions.stream(...).finalChatCompletion(), the
//    SDK's own reassembly of the deltas (tool call pieces included), with the raw chunks too.
//    Prints [{"message", "finish_reason", "chunks"?} | {"error": {...}}, ...].
//  - loop: the agent loop on requests[0]: a call (the request's tool_choice), the tool's
//    result sent back with the assistant message as the SDK returned it, then the final
//    answer with tool_choice "none". Prints {"first": message, "second": message,
//    "second_finish_reason"}.
//
// HTTPS: Node trusts the CA in $NODE_EXTRA_CA_CERTS. The openai package is not in the
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
      const reply = await client.chat.completions.create(request);
      return { message: reply.choices[0].message, finish_reason: reply.choices[0].finish_reason };
    }
    const { stream, ...rest } = request;
    const runner = client.chat.completions.stream(rest);
    const chunks = [];
    runner.on('chunk', (chunk) => chunks.push(chunk));
    const reply = await runner.finalChatCompletion();
    return { message: reply.choices[0].message, finish_reason: reply.choices[0].finish_reason,
             chunks };
  } catch (e) {
    if (e instanceof OpenAI.APIError) return { error: { status: e.status, message: e.message } };
    throw e;
  }
}

async function loop(request) {
  const first = await client.chat.completions.create(request);
  const message = first.choices[0].message;
  const messages = [...request.messages, message];
  for (const call of message.tool_calls || []) {
    messages.push({ role: 'tool', tool_call_id: call.id, content: '{"temperature": 21}' });
  }
  const second = await client.chat.completions.create(
      { ...request, messages, tool_choice: 'none' });
  return { first: message, second: second.choices[0].message,
           second_finish_reason: second.choices[0].finish_reason };
}

if (args.op === 'batch') {
  const out = [];
  for (const request of args.requests) out.push(await one(request));
  console.log(JSON.stringify(out));
} else if (args.op === 'loop') {
  console.log(JSON.stringify(await loop(args.requests[0])));
} else {
  throw new Error(`unknown op ${args.op}`);
}
