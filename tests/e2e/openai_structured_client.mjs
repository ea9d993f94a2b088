// The official `openai` npm client's structured-output helpers against Tandem's HTTP API, one
// operation per run, driven by structured_output_test.py (which makes the assertions):
//
//   node openai_structured_client.mjs '{"op": "create" | "parse" | "stream_parse",
//                                       "base_url": "http://127.0.0.1:P/v1", "request": {...}}'
//
//  - create: client.chat.completions.create(request) (streamed when request.stream: then
//    {"chunks": [...]});
//  - parse: client.chat.completions.parse with response_format zodResponseFormat(Person);
//  - stream_parse: client.chat.completions.stream with the same format, then
//    finalChatCompletion().
// parse and stream_parse print {"content", "parsed", "finish_reason"}. A refused request
// prints {"error": {"status", "message"}}.
//
// HTTPS: Node trusts the CA in $NODE_EXTRA_CA_CERTS. The packages (openai, zod) are not in the
// repository: tools/setup.sh installs them into $TANDEM_NPM_DIR (default ~/.cache/tandem-npm).
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

const npmDir = process.env.TANDEM_NPM_DIR || path.join(os.homedir(), '.cache', 'tandem-npm');
const require = createRequire(path.join(npmDir, 'package.json'));
const OpenAI = require('openai').default;
const { zodResponseFormat } = require('openai/helpers/zod');
const { z } = require('zod');

const args = JSON.parse(process.argv[2]);
const apiKey = process.env.TANDEM_API_KEY || 'unused';
const client = new OpenAI({ baseURL: args.base_url, apiKey, maxRetries: 0, timeout: 60_000 });

// What the test's schema says, in zod: strings bounded so that a small model's output ends.
const Person = z.object({
  name: z.string().max(12),
  age: z.number().int().min(0).max(99),
  good: z.boolean(),
  friends: z.array(z.string().max(8)).max(3),
});

function parsedReply(completion) {
  const choice = completion.choices[0];
  return { content: choice.message.content, parsed: choice.message.parsed,
           finish_reason: choice.finish_reason };
}

async function run() {
  const request = { ...args.request };
  switch (args.op) {
    case 'create': {
      const reply = await client.chat.completions.create(request);
      if (!request.stream) return reply;
      const chunks = [];
      for await (const chunk of reply) chunks.push(chunk);
      return { chunks };
    }
    case 'parse':
      request.response_format = zodResponseFormat(Person, 'person');
      return parsedReply(await client.chat.completions.parse(request));
    case 'stream_parse': {
      request.response_format = zodResponseFormat(Person, 'person');
      const stream = client.chat.completions.stream(request);
      return parsedReply(await stream.finalChatCompletion());
    }
    default:
      throw new Error(`unknown op ${args.op}`);
  }
}

try {
  console.log(JSON.stringify(await run()));
} catch (e) {
  if (e instanceof OpenAI.APIError) {
    console.log(JSON.stringify({ error: { status: e.status, message: e.message } }));
  } else {
    throw e;
  }
}
