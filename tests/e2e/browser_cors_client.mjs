// A headless Chromium page (Debian's /usr/bin/chromium, driven by playwright-core) calling
// Tandem's HTTP API with fetch() from another origin, and the official `openai` npm client in
// Node, for browser_cors_test.py (which makes the assertions). One operation per run:
//
//   node browser_cors_client.mjs '{"op": "page", "page": "http://127.0.0.1:P/",
//                                  "api": "http://127.0.0.1:Q", "key": "...", "model": "..."}'
//     loads `page` (a blank page on its own origin) and runs, inside it, the calls of
//     browser_cors_test.py; prints {name: {status, body} | {blocked: message}}
//   node browser_cors_client.mjs '{"op": "openai", "api": ..., "key": ..., "request": {...}}'
//     one chat completion (streamed when request.stream) through the openai client
//
// The packages are not in the repository: tools/setup.sh installs them into $TANDEM_NPM_DIR
// (default ~/.cache/tandem-npm) and chromium with apt.
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

const npmDir = process.env.TANDEM_NPM_DIR || path.join(os.homedir(), '.cache', 'tandem-npm');
const require = createRequire(path.join(npmDir, 'package.json'));
const args = JSON.parse(process.argv[2]);

// Runs in the page: each call's status and body, or the error fetch() threw (a CORS refusal
// is a TypeError the page cannot look behind).
async function pageCalls({ api, key, model }) {
  async function call(name, url, init, stream) {
    try {
      const r = await fetch(url, init);
      if (!stream) return [name, { status: r.status, body: await r.text() }];
      const reader = r.body.getReader();
      const decoder = new TextDecoder();
      let body = '';
      let reads = 0;
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        reads += 1;
        body += decoder.decode(value, { stream: true });
      }
      return [name, { status: r.status, body, reads }];
    } catch (e) {
      return [name, { blocked: String(e) }];
    }
  }
  const json = { 'Content-Type': 'application/json' };
  const auth = { ...json, Authorization: `Bearer ${key}` };
  const chat = (extra) => JSON.stringify({
    model, max_tokens: 12, temperature: 0,
    messages: [{ role: 'user', content: 'Once upon a time' }], ...extra,
  });
  const calls = [
    call('models_without_key', `${api}/v1/models`, {}),
    call('chat_without_key', `${api}/v1/chat/completions`,
         { method: 'POST', headers: json, body: chat({}) }),
    call('chat_with_key', `${api}/v1/chat/completions`,
         { method: 'POST', headers: auth, body: chat({}) }),
    call('chat_unknown_model', `${api}/v1/chat/completions`,
         { method: 'POST', headers: auth, body: chat({ model: 'nope' }) }),
    call('stream_with_key', `${api}/chat/completions`,
         { method: 'POST', headers: auth, body: chat({ stream: true }) }, true),
    call('tokenize', `${api}/tokenize`,
         { method: 'POST', headers: auth,
           body: JSON.stringify({ content: 'Once upon a time', with_pieces: true }) }),
  ];
  return Object.fromEntries(await Promise.all(calls));
}

async function page() {
  const { chromium } = require('playwright-core');
  const browser = await chromium.launch({
    executablePath: process.env.TANDEM_CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
  try {
    const tab = await browser.newPage();
    await tab.goto(args.page);
    const results = await tab.evaluate(pageCalls, args);
    // The tokens back into text, in the page as well.
    const ids = JSON.parse(results.tokenize.body ?? '{}').tokens?.map((t) => t.id) ?? [];
    results.detokenize = await tab.evaluate(async ({ api, key, ids }) => {
      try {
        const r = await fetch(`${api}/detokenize`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${key}` },
          body: JSON.stringify({ tokens: ids }),
        });
        return { status: r.status, body: await r.text() };
      } catch (e) {
        return { blocked: String(e) };
      }
    }, { ...args, ids });
    return results;
  } finally {
    await browser.close();
  }
}

async function openai() {
  const OpenAI = require('openai').default;
  const client = new OpenAI({ baseURL: `${args.api}/v1`, apiKey: args.key, maxRetries: 0 });
  const reply = await client.chat.completions.create(args.request);
  if (!args.request.stream) return reply;
  const chunks = [];
  for await (const chunk of reply) chunks.push(chunk);
  return { chunks };
}

const ops = { page, openai };
try {
  console.log(JSON.stringify(await ops[args.op]()));
} catch (e) {
  console.log(JSON.stringify({ error: { name: e?.name, status: e?.status, message: String(e) } }));
}
