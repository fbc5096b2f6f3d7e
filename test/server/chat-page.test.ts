/**
 * The built-in chat page (GET /) in headless Chromium (Debian's /usr/bin/chromium, driven by
 * playwright-core) against a server on the Qwen3-tiny fixture (stories260K has no chat template),
 * behind an API key. Checked: the page asks for the key and lists the models once it is typed;
 * a message typed and sent streams back the same reply that a direct /v1/chat/completions call
 * with the same greedy parameters returns, and the second turn sends the conversation kept in
 * memory (its reply again equal to the direct call's); reasoning_content deltas are shown folded,
 * apart from the answer (a stream the test serves: the fixture never thinks); Stop aborts the request as the server sees it
 * (access log 499, the slot freed) while the text streamed so far stays; the answer is drawn (a
 * screenshot of it has text-dark pixels); the Content-Security-Policy blocks an inline script and
 * the page's own script runs under it with no violation. Without a browser the plain-HTTP checks
 * (headers, --no-ui, no text model) still run and the rest is skipped with a message.
 *
 * .ci/run installs Debian's chromium when it can (apt-get as root).
 */
import * as fs from 'node:fs';
import type { ServerResponse } from 'node:http';
import type { Browser, Page } from 'playwright-core';
import { loadEmbedder, type Embedder } from '../../lib/models/embedder';
import { loadModel, type Model } from '../../lib/models/model';
import type { AccessLogEntry } from '../../lib/server';
import { fixture } from '../helpers/fixtures';
import { rawRequest, startServer, until, type Running } from './server-helpers';

// The browser's globals, in the functions page.evaluate runs there (tsconfig has no DOM library; module-local).
declare const document: any;
declare const window: any;
declare const Image: any;

const CHROMIUM = '/usr/bin/chromium';
const hasChromium = fs.existsSync(CHROMIUM);
const KEY = 'chat-page-key-42';
const MODEL = 'qwen3-tiny';

let model: Model;

beforeAll(async () => {
  model = await loadModel(fixture('ajc1-qwen3-tiny', 'model.bin'));
});

afterAll(() => model?.dispose());

/** A direct /v1/chat/completions call (not streamed): the reference the page's stream must equal. */
async function direct(origin: string, body: Record<string, unknown>): Promise<{ content: string; reasoning?: string }> {
  const response = await rawRequest(origin, '/v1/chat/completions', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${KEY}` },
    body: JSON.stringify({ model: MODEL, temperature: 0, ...body }),
  });
  expect(response.status).toBe(200);
  const message = response.body.choices[0].message;
  return { content: message.content, reasoning: message.reasoning_content };
}

describe('the chat page over plain HTTP', () => {
  let running: Running;
  afterEach(() => running?.stop());

  it('GET / and its script and style: the types, a CSP of its own origin only, nosniff, no key needed; HEAD too', async () => {
    running = await startServer({ model, apiKey: KEY, modelId: MODEL });
    for (const [path, type] of [['/', 'text/html'], ['/ui/chat.js', 'text/javascript'], ['/ui/chat.css', 'text/css']]) {
      for (const method of ['GET', 'HEAD']) {
        const response = await fetch(`${running.origin}${path}`, { method });
        expect({ path, method, status: response.status }).toEqual({ path, method, status: 200 });
        expect(response.headers.get('content-type')).toBe(`${type}; charset=utf-8`);
        expect(response.headers.get('x-content-type-options')).toBe('nosniff');
        const csp = response.headers.get('content-security-policy') ?? '';
        expect(csp).toMatch(/(^|; )script-src 'self'(;|$)/);
        expect(csp).toMatch(/(^|; )default-src 'none'(;|$)/);
        expect(csp).toMatch(/(^|; )connect-src 'self'(;|$)/);
        expect(csp).not.toMatch(/unsafe-inline|unsafe-eval/);
        expect(Number(response.headers.get('content-length'))).toBeGreaterThan(100);
        expect(await response.text()).toBe(method === 'HEAD' ? '' : fs.readFileSync(`${__dirname}/../../lib/server/chat-page/${path === '/' ? 'index.html' : path.slice(4)}`, 'utf8'));
      }
    }
    // The page names only its own files: no inline script, nothing from another host.
    const html = await (await fetch(`${running.origin}/`)).text();
    expect([...html.matchAll(/<script\b([^>]*)>/g)].map((m) => m[1].trim())).toEqual(['src="/ui/chat.js" defer']);
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
    // The API itself still needs the key; a POST to / is refused.
    expect((await rawRequest(running.origin, '/v1/models')).status).toBe(401);
    expect((await rawRequest(running.origin, '/', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' })).status).toBe(405);
    // The Host check applies to the page as to the API (a DNS-rebinding page's name).
    const { status } = await new Promise<{ status: number }>((resolve, reject) => {
      const http = require('node:http') as typeof import('node:http');
      http.get(`${running.origin}/`, { headers: { Host: 'evil.example' }, agent: false }, (res) => resolve({ status: res.resume().statusCode! })).on('error', reject);
    });
    expect(status).toBe(421);
  });

  it('ui: false serves no page (404), nor does a server without a text model', async () => {
    running = await startServer({ model, modelId: MODEL, ui: false });
    expect((await rawRequest(running.origin, '/')).status).toBe(404);
    expect((await rawRequest(running.origin, '/ui/chat.js')).status).toBe(404);
    await running.stop();
    let embedder: Embedder | undefined;
    try {
      embedder = await loadEmbedder(fixture('embd-minilm-tiny', 'model.weights'));
      running = await startServer({ embedder });
      expect((await rawRequest(running.origin, '/')).status).toBe(404);
    } finally {
      await running.stop();
      embedder?.dispose();
    }
  });
});

if (!hasChromium) console.warn(`chat-page.test.ts: the browser checks are skipped: no ${CHROMIUM} here (Debian: apt-get install chromium; .ci/run installs it when it can)`);

(hasChromium ? describe : describe.skip)('the chat page in headless Chromium', () => {
  let browser: Browser;
  let running: Running;
  const log: AccessLogEntry[] = [];
  /** Set by a test: the next chat stream is held after its first content event (its later writes wait, as a full socket would). */
  let holdNext = false;
  /** The chat requests the page sent: their bodies and Authorization headers. */
  const sent: Array<{ body: any; authorization?: string }> = [];
  const violations: string[] = [];
  let page: Page;

  /** Holds `res` after its first event with content: write() reports a full socket and keeps the rest. */
  function hold(res: ServerResponse): void {
    const write = res.write.bind(res) as (chunk: unknown) => boolean;
    let holding = false;
    res.write = ((chunk: unknown) => {
      if (holding) return false;
      const passed = write(chunk);
      if (/"content":"[^"]/.test(String(chunk))) holding = true;
      return passed;
    }) as typeof res.write;
    res.end = ((..._args: unknown[]) => res) as typeof res.end; // the end waits too: the client must be the one to close
  }

  beforeAll(async () => {
    const { chromium } = await import('playwright-core');
    running = await startServer({ model, apiKey: KEY, modelId: MODEL, accessLog: (entry) => log.push(entry) });
    running.server.prependListener('request', (req, res) => {
      if (holdNext && req.url === '/v1/chat/completions') {
        holdNext = false;
        hold(res);
      }
    });
    browser = await chromium.launch({ executablePath: CHROMIUM });
    page = await browser.newPage();
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) violations.push(message.text());
    });
    page.on('request', (request) => {
      if (request.url().endsWith('/v1/chat/completions')) sent.push({ body: JSON.parse(request.postData() ?? 'null'), authorization: request.headers().authorization });
    });
    await page.goto(`${running.origin}/`);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await running?.stop();
  });

  const reply = (n: number) => page.locator('.msg.assistant').nth(n);
  /** Waits until the n-th reply is no longer streaming; its state. */
  async function settled(n: number): Promise<string> {
    await page.waitForFunction((i) => {
      const el = document.querySelectorAll('.msg.assistant')[i];
      return el !== undefined && el.dataset.state !== 'streaming';
    }, n, { timeout: 30_000 });
    return (await reply(n).getAttribute('data-state'))!;
  }
  async function say(text: string): Promise<void> {
    await page.fill('#input', text);
    await page.click('#send');
  }

  it('asks for the API key, then lists the models once it is typed', async () => {
    await page.waitForFunction(() => document.getElementById('status')!.textContent !== '');
    expect(await page.textContent('#status')).toMatch(/API key/);
    expect(await page.locator('#model option').count()).toBe(0);
    await page.fill('#api-key', KEY);
    await page.dispatchEvent('#api-key', 'change');
    await page.waitForFunction(() => document.getElementById('model').options.length > 0);
    expect(await page.locator('#model option').allTextContents()).toEqual([MODEL]);
    expect(await page.textContent('#status')).toBe('');
  });

  it('streams the reply a direct greedy call gives, and sends the conversation it keeps on the next turn', async () => {
    await page.click('#settings summary');
    await page.fill('#temperature', '0');
    await page.fill('#max-tokens', '40');
    const first = "What's 12+7?";
    await say(first);
    expect(await settled(0)).toBe('done');
    const shown = await reply(0).locator('.content').textContent();
    const expected = await direct(running.origin, { messages: [{ role: 'user', content: first }], max_tokens: 40 });
    expect(expected.content.length).toBeGreaterThan(0);
    expect(shown).toBe(expected.content);
    expect(sent[0].authorization).toBe(`Bearer ${KEY}`);
    expect(sent[0].body).toMatchObject({ model: MODEL, stream: true, temperature: 0, max_tokens: 40, messages: [{ role: 'user', content: first }] });

    const second = 'And 3+4?';
    await say(second);
    expect(await settled(1)).toBe('done');
    const turns = [{ role: 'user', content: first }, { role: 'assistant', content: expected.content }, { role: 'user', content: second }];
    expect(sent[1].body.messages).toEqual(turns);
    expect(await reply(1).locator('.content').textContent()).toBe((await direct(running.origin, { messages: turns, max_tokens: 40 })).content);

    // Drawn, not only in the DOM: the reply's screenshot has the dark pixels of its text (#1a1a1a on white; the border is light).
    const png = (await reply(0).screenshot()).toString('base64');
    const blank = await browser.newPage();
    try {
      const dark = await blank.evaluate(async (data) => {
        const image = new Image();
        image.src = `data:image/png;base64,${data}`;
        await image.decode();
        const canvas = document.createElement('canvas');
        canvas.width = image.width;
        canvas.height = image.height;
        const context = canvas.getContext('2d')!;
        context.drawImage(image, 0, 0);
        const { data: pixels } = context.getImageData(0, 0, image.width, image.height);
        let count = 0;
        for (let i = 0; i < pixels.length; i += 4) if (pixels[i] + pixels[i + 1] + pixels[i + 2] < 3 * 100) count++;
        return count;
      }, png);
      expect(dark).toBeGreaterThan(50);
    } finally {
      await blank.close();
    }
  });

  it('shows Qwen3 thinking folded, apart from the answer (a stream with reasoning_content deltas, served by the test)', async () => {
    // The Qwen3-tiny fixture never opens a <think> block, so this stream is the test's own: the
    // server's split of thinking is test/server/chat.test.ts's; here, what the page makes of it.
    const reasoning = ['The user adds ', '12 and 7: ', '19.'];
    const answer = ['It is ', '19', '.'];
    const chunk = (delta: Record<string, string>, finish: string | null = null) =>
      `data: ${JSON.stringify({ id: 'x', object: 'chat.completion.chunk', created: 0, model: MODEL, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    const body = [chunk({ role: 'assistant', content: '' }), ...reasoning.map((r) => chunk({ reasoning_content: r })), ...answer.map((c) => chunk({ content: c })), chunk({}, 'stop'), 'data: [DONE]\n\n'].join('');
    await page.route('**/v1/chat/completions', (route) => route.fulfill({ status: 200, headers: { 'Content-Type': 'text/event-stream' }, body }));
    try {
      await page.click('#new-chat');
      expect(await page.locator('.msg').count()).toBe(0);
      await page.check('#thinking');
      await say("What's 12+7?");
      expect(await settled(0)).toBe('done');
      const details = reply(0).locator('details.reasoning');
      expect(await details.evaluate((el) => (el as { open: boolean }).open)).toBe(false);
      expect(await details.locator('.reasoning-text').textContent()).toBe(reasoning.join(''));
      expect(await reply(0).locator('.content').textContent()).toBe(answer.join(''));
      expect(sent.at(-1)!.body.messages).toEqual([{ role: 'user', content: "What's 12+7?" }]); // a new chat starts empty
      expect(sent.at(-1)!.body.chat_template_kwargs).toEqual({ enable_thinking: true });
      // The next turn sends the answer alone, without the thinking.
      await say('Thanks');
      expect(await settled(1)).toBe('done');
      expect(sent.at(-1)!.body.messages[1]).toEqual({ role: 'assistant', content: answer.join('') });
    } finally {
      await page.unroute('**/v1/chat/completions');
      await page.uncheck('#thinking');
    }
  });

  it('Stop aborts the request (the server logs 499 and frees the slot); the text streamed so far stays and is sent on', async () => {
    await page.click('#new-chat');
    await page.fill('#max-tokens', '200');
    expect(await page.isChecked('#thinking')).toBe(false);
    const question = 'Tell me a story.';
    const firstDelta = await (async () => {
      // The reference's first content delta: what the held stream delivers before it waits.
      const response = await fetch(`${running.origin}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${KEY}` },
        body: JSON.stringify({ model: MODEL, temperature: 0, max_tokens: 200, stream: true, messages: [{ role: 'user', content: question }] }),
      });
      const events = (await response.text()).split('\n\n').filter((e) => e.startsWith('data: {')).map((e) => JSON.parse(e.slice(6)));
      return events.map((e) => e.choices[0]?.delta?.content ?? '').find((c: string) => c !== '') as string;
    })();
    expect(firstDelta.length).toBeGreaterThan(0);
    const logged = log.length;
    holdNext = true;
    await say(question);
    await page.waitForFunction(() => (document.querySelector('.msg.assistant .content')?.textContent ?? '') !== '');
    expect(await page.isEnabled('#stop')).toBe(true);
    expect(await page.isDisabled('#send')).toBe(true);
    await page.click('#stop');
    expect(await settled(0)).toBe('stopped');
    expect(await reply(0).locator('.content').textContent()).toBe(firstDelta);
    await until(() => log.slice(logged).some((e) => e.path === '/v1/chat/completions'));
    expect(log.slice(logged).find((e) => e.path === '/v1/chat/completions')!.status).toBe(499);
    await until(() => running.server.handler.inFlight === 0 && running.server.handler.scheduler!.active === 0);
    expect(await page.isEnabled('#send')).toBe(true);

    await page.fill('#max-tokens', '5');
    await say('Go on.');
    expect(await settled(1)).toBe('done');
    expect(sent.at(-1)!.body.messages).toEqual([{ role: 'user', content: question }, { role: 'assistant', content: firstDelta }, { role: 'user', content: 'Go on.' }]);
  });

  it('the Content-Security-Policy blocks an inline script; the page ran under it with no violation', async () => {
    expect(violations).toEqual([]);
    const blocked = await page.evaluate(async () => {
      const seen = new Promise<string>((resolve) => document.addEventListener('securitypolicyviolation', (e: { violatedDirective: string }) => resolve(e.violatedDirective), { once: true }));
      const script = document.createElement('script');
      script.textContent = 'window.inlineRan = true';
      document.head.append(script);
      return { directive: await seen, ran: window.inlineRan === true };
    });
    expect(blocked.ran).toBe(false);
    expect(blocked.directive).toMatch(/^script-src/);
  });
});
