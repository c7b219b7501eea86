// The real-client test over Streamable HTTP (issue 4): `snodo serve --http`
// driven by the official MCP TypeScript client and its
// StreamableHTTPClientTransport, in both protocol eras.
//
//   - initialize era (the client's default 'legacy' negotiation): initialize
//     mints an Mcp-Session-Id that the transport sends on every later
//     request; terminateSession() sends DELETE, after which the id is 404.
//   - stateless era (`versionNegotiation: { mode: { pin: '2026-07-28' } }`):
//     no session, every POST carries the _meta envelope and the standard
//     headers (MCP-Protocol-Version, Mcp-Method, Mcp-Name), which the server
//     checks against the body.
// A recording fetch keeps every HTTP exchange so the tests can assert the
// wire (status codes, headers) as well as what the client returns.
//
// Servers: components/ (the bundled examples, as stdio.test.mjs) and
// tests/conformance/ (progress over SSE, x-mcp-header). Environment:
// SNODO_BIN (default ../../build/snodo), SNODO_COMPONENTS (default
// ../../components). Run with tests/client/run.sh.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const here = dirname(fileURLToPath(import.meta.url));
const SNODO_BIN = resolve(process.env.SNODO_BIN ?? resolve(here, '../../build/snodo'));
const COMPONENTS = resolve(process.env.SNODO_COMPONENTS ?? resolve(here, '../../components'));
const CONFORMANCE = resolve(here, '../conformance');

const MODERN = '2026-07-28';
const PROTOCOL_VERSION_KEY = 'io.modelcontextprotocol/protocolVersion';
const SERVER_INFO_KEY = 'io.modelcontextprotocol/serverInfo';
const CLIENT_INFO = { name: 'snodo-http-client-test', version: '1.0.0' };
const text = (t) => ({ type: 'text', text: t });

// ---------------------------------------------------------------------------
// The server process

/** Starts `snodo serve DIR --http 127.0.0.1:0` and waits for its URL. */
async function startServer(dir) {
  const child = spawn(SNODO_BIN, ['serve', dir, '--http', '127.0.0.1:0'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const server = { child, stderr: '', url: null };
  child.stderr.setEncoding('utf8');
  const exited = new Promise((done) => child.once('exit', (code, signal) => done({ code, signal })));
  server.exited = exited;
  server.url = await new Promise((done, fail) => {
    const timer = setTimeout(() => fail(new Error(`no URL from snodo serve:\n${server.stderr}`)), 10000);
    child.stderr.on('data', (chunk) => {
      server.stderr += chunk;
      const m = server.stderr.match(/over HTTP at (http:\/\/127\.0\.0\.1:\d+\/mcp)/);
      if (m) {
        clearTimeout(timer);
        done(new URL(m[1]));
      }
    });
    exited.then(({ code }) => fail(new Error(`snodo serve exited ${code}:\n${server.stderr}`)));
  });
  return server;
}

/** SIGTERM: the server stops gracefully with status 0 and a clean stderr. */
async function stopServer(server) {
  server.child.kill('SIGTERM');
  const { code, signal } = await server.exited;
  assert.equal(signal, null);
  assert.equal(code, 0, server.stderr);
  assert.doesNotMatch(server.stderr, /AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|runtime error:/);
}

// ---------------------------------------------------------------------------
// The client

/** A Client over StreamableHTTPClientTransport that records every exchange. */
async function connect(url, clientOptions) {
  const exchanges = [];
  const recordingFetch = async (input, init = {}) => {
    const headers = new Headers(init.headers);
    const response = await fetch(input, init);
    exchanges.push({
      method: init.method ?? 'GET',
      headers,
      body: typeof init.body === 'string' ? JSON.parse(init.body) : undefined,
      status: response.status,
      responseHeaders: response.headers,
    });
    return response;
  };
  const transport = new StreamableHTTPClientTransport(url, { fetch: recordingFetch });
  const client = new Client(CLIENT_INFO, clientOptions);
  await client.connect(transport);
  return { client, transport, exchanges };
}

/** The last POST whose JSON-RPC method is `method`. */
function lastPost(exchanges, method) {
  const e = exchanges.findLast((x) => x.method === 'POST' && x.body?.method === method);
  assert.ok(e, `no POST of ${method}`);
  return e;
}

// ---------------------------------------------------------------------------

describe('initialize era over HTTP (2025-11-25, with a session)', () => {
  let server, conn;
  before(async () => {
    server = await startServer(COMPONENTS);
    conn = await connect(server.url, {});
  });
  after(async () => { await conn?.client.close().catch(() => {}); });

  test('initialize mints a visible-ASCII Mcp-Session-Id', () => {
    const { client, transport, exchanges } = conn;
    assert.equal(client.getProtocolEra(), 'legacy');
    assert.equal(client.getNegotiatedProtocolVersion(), '2025-11-25');
    const id = transport.sessionId;
    assert.match(id, /^[\x21-\x7e]{32,}$/);
    const init = lastPost(exchanges, 'initialize');
    assert.equal(init.status, 200);
    assert.equal(init.responseHeaders.get('mcp-session-id'), id);
    const initialized = lastPost(exchanges, 'notifications/initialized');
    assert.equal(initialized.status, 202);
    assert.equal(initialized.headers.get('mcp-session-id'), id);
  });

  test('tools/list and tools/call carry the session', async () => {
    const { client, transport, exchanges } = conn;
    const { tools } = await client.listTools();
    assert.ok(tools.some((t) => t.name === 'echo'));
    const result = await client.callTool({ name: 'echo', arguments: { text: 'over http' } });
    assert.deepEqual(result, { content: [text('echo: over http')] });
    const call = lastPost(exchanges, 'tools/call');
    assert.equal(call.headers.get('mcp-session-id'), transport.sessionId);
    assert.equal(call.headers.get('mcp-protocol-version'), '2025-11-25');
    assert.equal(call.status, 200);
  });

  test('a tool error and an unknown tool', async () => {
    const miss = await conn.client.callTool({ name: 'lookup', arguments: { name: 'nosuch' } });
    assert.deepEqual(miss, { content: [text('No package named nosuch')], isError: true });
    await assert.rejects(conn.client.callTool({ name: 'no_such_tool', arguments: {} }),
      (error) => error.code === -32602);
  });

  test('DELETE ends the session; the id is then 404', async () => {
    const id = conn.transport.sessionId;
    await conn.transport.terminateSession();
    const del = conn.exchanges.findLast((x) => x.method === 'DELETE');
    assert.equal(del.status, 204);
    const res = await fetch(server.url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
                 'Mcp-Session-Id': id, 'MCP-Protocol-Version': '2025-11-25' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }),
    });
    assert.equal(res.status, 404);
    assert.equal((await res.json()).id, 9);
  });

  test('the server stops on SIGTERM with status 0', async () => {
    await conn.client.close().catch(() => {});
    conn = null;
    await stopServer(server);
  });
});

describe(`stateless era over HTTP (${MODERN}, no session)`, () => {
  let server, conn;
  before(async () => {
    server = await startServer(COMPONENTS);
    conn = await connect(server.url, { versionNegotiation: { mode: { pin: MODERN } } });
  });
  after(async () => { await conn?.client.close().catch(() => {}); });

  test('connects without initialize or a session', () => {
    const { client, transport, exchanges } = conn;
    assert.equal(client.getProtocolEra(), 'modern');
    assert.equal(client.getNegotiatedProtocolVersion(), MODERN);
    assert.equal(transport.sessionId, undefined);
    assert.equal(exchanges.some((x) => x.body?.method === 'initialize'), false);
    assert.equal(exchanges.some((x) => x.responseHeaders.get('mcp-session-id')), false);
  });

  test('tools/list sends the standard headers and gets a modern result', async () => {
    const { client, exchanges } = conn;
    const result = await client.listTools(undefined, { cacheMode: 'refresh' });
    assert.ok(result.tools.some((t) => t.name === 'search'));
    const list = lastPost(exchanges, 'tools/list');
    assert.equal(list.status, 200);
    assert.equal(list.headers.get('mcp-protocol-version'), MODERN);
    assert.equal(list.headers.get('mcp-method'), 'tools/list');
    assert.equal(list.body.params._meta[PROTOCOL_VERSION_KEY], MODERN);
  });

  test('tools/call mirrors the tool name in Mcp-Name', async () => {
    const { client, exchanges } = conn;
    const result = await client.callTool({ name: 'greet', arguments: { name: 'Ada' } });
    assert.deepEqual(result.content, [text('Hello, Ada!')]);
    assert.equal(result._meta?.[SERVER_INFO_KEY]?.name, 'snodo-examples');
    const call = lastPost(exchanges, 'tools/call');
    assert.equal(call.headers.get('mcp-name'), 'greet');
    assert.equal(call.headers.get('mcp-session-id'), null);
  });

  test('structured results and validation errors', async () => {
    const version = await conn.client.callTool({ name: 'version', arguments: { name: 'jason' } });
    assert.deepEqual(version.structuredContent, { version: '1.2.3' });
    const missing = await conn.client.callTool({ name: 'search', arguments: { page: 1 } });
    assert.deepEqual(missing.content, [text('Missing required arguments: query')]);
    assert.equal(missing.isError, true);
  });

  test('the server stops on SIGTERM with status 0', async () => {
    await conn.client.close().catch(() => {});
    conn = null;
    await stopServer(server);
  });
});

describe('HTTP specifics with the conformance fixture', () => {
  let server;
  before(async () => { server = await startServer(CONFORMANCE); });
  after(async () => { if (server) await stopServer(server); });

  for (const [era, options] of [['2025-11-25', {}], [MODERN, { versionNegotiation: { mode: { pin: MODERN } } }]]) {
    test(`${era}: progress notifications arrive over SSE before the result`, async () => {
      const conn = await connect(server.url, options);
      try {
        const seen = [];
        const result = await conn.client.callTool(
          { name: 'test_tool_with_progress', arguments: {} },
          { onprogress: (p) => seen.push(p.progress) });
        assert.deepEqual(seen, [0, 50, 100]);
        assert.equal(result.content[0].type, 'text');
        const call = lastPost(conn.exchanges, 'tools/call');
        assert.match(call.responseHeaders.get('content-type'), /^text\/event-stream/);
        assert.equal(call.responseHeaders.get('x-accel-buffering'), 'no');
      } finally {
        await conn.client.close().catch(() => {});
      }
    });
  }

  test(`${MODERN}: an x-mcp-header argument is mirrored and checked`, async () => {
    const conn = await connect(server.url, { versionNegotiation: { mode: { pin: MODERN } } });
    try {
      const result = await conn.client.callTool({ name: 'test_x_mcp_header', arguments: { region: 'eu-west', level: 3 } });
      assert.deepEqual(result.content, [text('region eu-west, level 3')]);
      const call = lastPost(conn.exchanges, 'tools/call');
      assert.equal(call.headers.get('mcp-param-region'), 'eu-west');
    } finally {
      await conn.client.close().catch(() => {});
    }
  });
});
