// The built-in chat page of `weightmap serve` (GET /). Plain script, no framework: it lists the
// models of /v1/models, streams /v1/chat/completions and keeps the conversation in memory only
// (a reload starts over; the API key is never stored). Text goes into the page as text nodes,
// never as HTML, so nothing a model writes can run here.
'use strict';

(() => {
  const $ = (id) => document.getElementById(id);
  const els = {
    model: $('model'), apiKey: $('api-key'), newChat: $('new-chat'), system: $('system'),
    temperature: $('temperature'), topP: $('top-p'), maxTokens: $('max-tokens'), seed: $('seed'),
    thinking: $('thinking'), status: $('status'), messages: $('messages'), composer: $('composer'),
    input: $('input'), send: $('send'), stop: $('stop'),
  };
  /** The turns sent with each request: { role, content }, the system prompt excepted. */
  let conversation = [];
  /** The request streaming now, if any. */
  let running;

  function setStatus(text, isError = false) {
    els.status.textContent = text;
    els.status.classList.toggle('error', isError);
  }

  function headers() {
    const h = { 'Content-Type': 'application/json' };
    const key = els.apiKey.value.trim();
    if (key) h.Authorization = `Bearer ${key}`;
    return h;
  }

  /** The message of an error response (OpenAI's { error: { message } }), else its status. */
  async function errorOf(response) {
    try {
      const body = await response.json();
      if (body && body.error) return typeof body.error === 'string' ? body.error : body.error.message;
    } catch {
      // not JSON
    }
    return `${response.status} ${response.statusText}`;
  }

  async function loadModels() {
    try {
      const response = await fetch('/v1/models', { headers: headers() });
      if (!response.ok) {
        els.model.replaceChildren();
        setStatus(response.status === 401 ? 'This server needs an API key: type it above.' : await errorOf(response), true);
        return;
      }
      const { data } = await response.json();
      const previous = els.model.value;
      els.model.replaceChildren(...data.map(({ id }) => new Option(id, id)));
      if (data.some(({ id }) => id === previous)) els.model.value = previous;
      setStatus(data.length ? '' : 'This server lists no model.', data.length === 0);
    } catch (error) {
      setStatus(`Could not list the models: ${error.message}`, true);
    }
  }

  function addMessage(role, text) {
    const el = document.createElement('div');
    el.className = `msg ${role}`;
    const content = document.createElement('span');
    content.className = 'content';
    content.textContent = text;
    el.append(content);
    els.messages.append(el);
    el.scrollIntoView({ block: 'end' });
    return el;
  }

  /** A number field's value, or undefined when empty. */
  function numberOf(input) {
    return input.value.trim() === '' ? undefined : Number(input.value);
  }

  function requestBody() {
    const system = els.system.value.trim();
    const body = {
      model: els.model.value,
      messages: [...(system ? [{ role: 'system', content: system }] : []), ...conversation],
      stream: true,
      stream_options: { include_usage: true },
    };
    const fields = { temperature: els.temperature, top_p: els.topP, max_tokens: els.maxTokens, seed: els.seed };
    for (const [name, input] of Object.entries(fields)) {
      const value = numberOf(input);
      if (value !== undefined) body[name] = value;
    }
    if (els.thinking.checked) body.chat_template_kwargs = { enable_thinking: true };
    return body;
  }

  /** The server-sent events of `response`, each event's data parsed; resolves at [DONE] or the end. */
  async function readEvents(response, onEvent) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffered = '';
    for (;;) {
      const { value, done } = await reader.read();
      buffered += decoder.decode(value, { stream: !done });
      let end;
      while ((end = buffered.indexOf('\n\n')) >= 0) {
        const event = buffered.slice(0, end);
        buffered = buffered.slice(end + 2);
        const data = event.split('\n').filter((line) => line.startsWith('data:')).map((line) => line.slice(5).trimStart()).join('\n');
        if (data === '[DONE]') return;
        if (data) onEvent(JSON.parse(data));
      }
      if (done) return;
    }
  }

  function setRunning(controller) {
    running = controller;
    els.send.disabled = controller !== undefined;
    els.stop.disabled = controller === undefined;
  }

  async function send(text) {
    const user = addMessage('user', text);
    // "New chat" replaces the conversation: this turn's pushes then land in the old one.
    const turns = conversation;
    turns.push({ role: 'user', content: text });
    const reply = addMessage('assistant', '');
    reply.dataset.state = 'streaming';
    const content = reply.querySelector('.content');
    let reasoning;
    let answer = '';
    let usage;
    let finish;
    const controller = new AbortController();
    setRunning(controller);
    setStatus('');
    const started = performance.now();
    const end = (state, note) => {
      reply.dataset.state = state;
      const meta = document.createElement('span');
      meta.className = 'meta';
      meta.textContent = note;
      reply.append(meta);
    };
    try {
      const response = await fetch('/v1/chat/completions', {
        method: 'POST', headers: headers(), body: JSON.stringify(requestBody()), signal: controller.signal,
      });
      if (!response.ok) throw new Error(await errorOf(response));
      await readEvents(response, (event) => {
        if (event.error) throw new Error(event.error.message);
        if (event.usage) usage = event.usage;
        for (const choice of event.choices || []) {
          const delta = choice.delta || {};
          if (delta.reasoning_content) {
            if (!reasoning) {
              const details = document.createElement('details');
              details.className = 'reasoning';
              const summary = document.createElement('summary');
              summary.textContent = 'Thinking';
              reasoning = document.createElement('div');
              reasoning.className = 'reasoning-text';
              details.append(summary, reasoning);
              reply.prepend(details);
            }
            reasoning.textContent += delta.reasoning_content;
          }
          if (delta.content) {
            answer += delta.content;
            content.textContent = answer;
          }
          if (choice.finish_reason) finish = choice.finish_reason;
        }
        reply.scrollIntoView({ block: 'end' });
      });
      turns.push({ role: 'assistant', content: answer });
      const seconds = (performance.now() - started) / 1000;
      const tokens = usage ? `${usage.completion_tokens} tokens, ${(usage.completion_tokens / seconds).toFixed(1)} tokens/s` : '';
      end('done', [finish === 'length' ? 'stopped at the token limit' : '', tokens].filter(Boolean).join(' · '));
    } catch (error) {
      if (controller.signal.aborted) {
        // What was streamed stays in the conversation, as it is shown.
        turns.push({ role: 'assistant', content: answer });
        end('stopped', 'stopped');
      } else {
        // The turn is taken back: the next message is sent without it.
        turns.pop();
        user.dataset.state = 'error';
        end('error', error.message);
        setStatus(error.message, true);
      }
    } finally {
      setRunning(undefined);
    }
  }

  els.composer.addEventListener('submit', (event) => {
    event.preventDefault();
    const text = els.input.value;
    if (running || text.trim() === '' || !els.model.value) return;
    els.input.value = '';
    void send(text);
  });
  els.input.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      els.composer.requestSubmit();
    }
  });
  els.stop.addEventListener('click', () => running?.abort());
  els.newChat.addEventListener('click', () => {
    running?.abort();
    conversation = [];
    els.messages.replaceChildren();
    setStatus('');
  });
  els.apiKey.addEventListener('change', () => void loadModels());
  void loadModels();
})();
