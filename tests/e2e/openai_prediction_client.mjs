// The official `openai` npm client's view of Predicted Outputs and the per-response
// speculation metrics, driven by prediction_test.py (which makes the assertions):
//
//   node openai_prediction_client.mjs '{"base_url": ".../v1", "requests": [{...}, ...]}'
//
// Each request through client.chat.completions.create; a streamed one (request.stream) with
// stream_options.include_usage, its chunks' content joined and its last chunk's usage and
// metrics kept. Prints [{"text", "usage", "metrics", "finish_reason", "tandem"} |
// {"error": {...}}] ("tandem": Tandem's own statistics, for the assertions' messages).
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
const client = new OpenAI({ baseURL: args.base_url, apiKey, maxRetries: 0, timeout: 120_000 });

async function one(request) {
  try {
    if (!request.stream) {
      const reply = await client.chat.completions.create(request);
      return { text: reply.choices[0].message.content, usage: reply.usage,
               metrics: reply.metrics, finish_reason: reply.choices[0].finish_reason,
               tandem: reply.tandem };
    }
    const stream = await client.chat.completions.create(
        { ...request, stream_options: { include_usage: true } });
    let text = '';
    let last = null;
    let finish = null;
    let tandem = null;
    for await (const chunk of stream) {
      if (chunk.tandem) tandem = chunk.tandem;
      for (const choice of chunk.choices) {
        text += choice.delta?.content || '';
        if (choice.finish_reason) finish = choice.finish_reason;
      }
      last = chunk;
    }
    return { text, usage: last.usage, metrics: last.metrics, finish_reason: finish, tandem };
  } catch (e) {
    if (e instanceof OpenAI.APIError) return { error: { status: e.status, message: e.message } };
    throw e;
  }
}

const out = [];
for (const request of args.requests) out.push(await one(request));
console.log(JSON.stringify(out));
