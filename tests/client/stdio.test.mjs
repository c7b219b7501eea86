// The real-client test (issue 2, item 7): `snodo serve --stdio components`
// driven by the official MCP TypeScript client, once per protocol era.
//
// How the client picks the era (@modelcontextprotocol/client 2.x):
//   - initialize era: the default `versionNegotiation` mode is 'legacy':
//     `connect()` sends `initialize` with the first pre-2026 entry of
//     `supportedProtocolVersions` (default 2025-11-25), then
//     `notifications/initialized`. Passing `supportedProtocolVersions:
//     ['2025-06-18']` offers 2025-06-18 instead.
//   - stateless era: `versionNegotiation: { mode: { pin: '2026-07-28' } }`.
//     `connect()` sends `server/discover` on a short-lived sibling process
//     spawned from the same StdioClientTransport parameters (the SDK does
//     that for its base stdio transport so a legacy server's one life is
//     not spent on the probe), then starts the session process and never
//     sends `initialize`: every request carries the `_meta` envelope
//     (io.modelcontextprotocol/protocolVersion, /clientInfo,
//     /clientCapabilities). Mode 'auto' probes the same way and picks the
//     modern era when the server offers it.
// The client consumes `resultType` and returns the rest of the result, so
// the tests also record the raw JSON-RPC messages on the transport and assert
// the wire fields (`resultType`, `_meta`, the request envelope) there.
//
// Run with tests/client/run.sh (installs Node 22 and the client into a cache
// dir). Environment: SNODO_BIN (default ../../build/snodo) and
// SNODO_COMPONENTS (default ../../components), defaults relative to this file.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const here = dirname(fileURLToPath(import.meta.url));
const SNODO_BIN = resolve(process.env.SNODO_BIN ?? resolve(here, '../../build/snodo'));
const COMPONENTS = resolve(process.env.SNODO_COMPONENTS ?? resolve(here, '../../components'));

const MODERN = '2026-07-28';
const PROTOCOL_VERSION_KEY = 'io.modelcontextprotocol/protocolVersion';
const CLIENT_CAPABILITIES_KEY = 'io.modelcontextprotocol/clientCapabilities';
const SERVER_INFO_KEY = 'io.modelcontextprotocol/serverInfo';
const CLIENT_INFO = { name: 'snodo-client-test', version: '1.0.0' };

const SERVER_NAME = 'snodo-examples';
const SERVER_VERSION = '0.1.0';
const INSTRUCTIONS = 'Example tools, resources and prompts bundled with Snodo.';

// ---------------------------------------------------------------------------
// Expected catalog: components/server.lua, 01_direct_tools.lua,
// 02_structured_schema.lua, 25_inline_components.lua, 30_interactions.lua, in
// tools/list order.

const SEARCH_TOOL = {
  name: 'search',
  title: 'Search packages',
  description: 'Search packages',
  icons: [{ src: 'https://example.com/search.png', mimeType: 'image/png' }],
  inputSchema: {
    type: 'object',
    properties: {
      query: { type: 'string', minLength: 1 },
      page: { type: 'integer', minimum: 1 },
      tags: { type: 'array', items: { type: 'string' }, uniqueItems: true },
    },
    required: ['query'],
    additionalProperties: false,
  },
  _meta: { 'com.example/search': { category: 'catalog' } },
};

const TOOLS = [
  {
    name: '25_inline_components',
    description: 'List the tool groups',
    inputSchema: { type: 'object', properties: {} },
  },
  {
    name: 'echo',
    description: 'Echo the text back',
    inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  },
  {
    name: 'greet',
    description: 'Create a greeting',
    inputSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
  },
  {
    name: 'long_job',
    description: 'A job in steps, reporting progress',
    inputSchema: {
      type: 'object',
      properties: { steps: { type: 'integer', minimum: 1, maximum: 10 } },
    },
  },
  {
    name: 'lookup',
    description: 'Look a package up; a miss is a tool error the model can act on',
    inputSchema: {
      type: 'object',
      properties: { name: { type: 'string', minLength: 1 } },
      required: ['name'],
      additionalProperties: false,
    },
  },
  {
    name: 'order',
    description: 'Place an order',
    inputSchema: {
      type: 'object',
      properties: {
        customer: {
          type: 'object',
          properties: { id: { type: 'string' }, email: { type: 'string' } },
          required: ['id'],
        },
        lines: {
          type: 'array',
          items: {
            type: 'object',
            properties: { sku: { type: 'string' }, quantity: { type: 'integer', minimum: 1 } },
            required: ['sku', 'quantity'],
            additionalProperties: false,
          },
          minItems: 1,
        },
      },
      required: ['customer', 'lines'],
    },
    outputSchema: {
      type: 'object',
      properties: { order_id: { type: 'string' }, total: { type: 'number' } },
      required: ['order_id', 'total'],
    },
  },
  SEARCH_TOOL,
  {
    name: 'send_message',
    description: 'Send a message after the user confirms',
    inputSchema: {
      type: 'object',
      properties: { to: { type: 'string' }, text: { type: 'string' } },
      required: ['to', 'text'],
    },
  },
  {
    name: 'touch_readme',
    description: 'Tell subscribers that the readme changed',
    inputSchema: { type: 'object', properties: {} },
  },
  {
    name: 'version',
    description: 'Latest version of a package',
    inputSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
    outputSchema: { type: 'object', properties: { version: { type: 'string' } } },
    annotations: { readOnlyHint: true, openWorldHint: false },
  },
];

/** The catalog as a dialect emits it: icons exist from 2025-11-25 on. */
function toolsFor(protocolVersion) {
  if (protocolVersion >= '2025-11-25') return TOOLS;
  return TOOLS.map(({ icons, ...rest }) => rest);
}

const text = (t) => ({ type: 'text', text: t });

// One valid call per bundled tool (lookup twice: a hit and a tool-level miss).
const CALLS = [
  {
    name: 'echo',
    arguments: { text: 'hi there' },
    result: { content: [text('echo: hi there')] },
  },
  {
    name: 'version',
    arguments: { name: 'jason' },
    result: {
      content: [text('{"version":"1.2.3"}')],
      structuredContent: { version: '1.2.3' },
    },
  },
  {
    name: 'lookup',
    arguments: { name: 'plug' },
    result: { content: [text('A web middleware library')] },
  },
  {
    name: 'lookup',
    label: 'lookup (miss is a tool error)',
    arguments: { name: 'nosuch' },
    result: { content: [text('No package named nosuch')], isError: true },
  },
  {
    name: 'search',
    arguments: { query: 'json', page: 2, tags: ['web', 'data'] },
    result: { content: [text('searching for json on page 2')] },
  },
  {
    name: 'order',
    arguments: {
      customer: { id: 'c-7', email: 'c7@example.com' },
      lines: [{ sku: 'sku-1', quantity: 2 }, { sku: 'sku-2', quantity: 1 }],
    },
    result: {
      content: [text('{"order_id":"o-1","total":12.5}')],
      structuredContent: { order_id: 'o-1', total: 12.5 },
    },
  },
  {
    name: 'greet',
    arguments: { name: 'Ada' },
    result: { content: [text('Hello, Ada!')] },
  },
  {
    name: '25_inline_components',
    arguments: {},
    result: {
      content: [text('{"groups":["web","data"]}')],
      structuredContent: { groups: ['web', 'data'] },
    },
  },
];

// ---------------------------------------------------------------------------
// Connection helper

/**
 * Starts `snodo serve --stdio COMPONENTS` under a Client built with
 * `clientOptions`, recording every JSON-RPC message in both directions and
 * the server's stderr. The recording wraps the transport instance (own
 * properties), so the transport stays the SDK's base StdioClientTransport
 * and the client's era negotiation takes its ordinary path.
 */
async function connect(clientOptions) {
  const transport = new StdioClientTransport({
    command: SNODO_BIN,
    args: ['serve', '--stdio', COMPONENTS],
    stderr: 'pipe',
  });
  const wire = { sent: [], received: [], stderr: '' };
  transport.stderr.setEncoding('utf8');
  transport.stderr.on('data', (chunk) => { wire.stderr += chunk; });
  const stderrEnded = new Promise((done) => transport.stderr.once('end', done));

  const send = transport.send.bind(transport);
  transport.send = (message, options) => {
    wire.sent.push(structuredClone(message));
    return send(message, options);
  };
  let onmessage;
  Object.defineProperty(transport, 'onmessage', {
    configurable: true,
    get: () => onmessage,
    set: (handler) => {
      onmessage = handler && ((message, extra) => {
        wire.received.push(structuredClone(message));
        return handler(message, extra);
      });
    },
  });

  const client = new Client(CLIENT_INFO, clientOptions);
  await client.connect(transport);
  return { client, transport, wire, stderrEnded };
}

/** The raw response to the request last sent with `method`. */
function lastResponse(wire, method) {
  const request = wire.sent.findLast((m) => m.method === method && 'id' in m);
  assert.ok(request, `no ${method} request was sent`);
  const response = wire.received.find((m) => m.id === request.id && !('method' in m));
  assert.ok(response, `no response to ${method} (id ${request.id})`);
  return { request, response };
}

/** Sanitizer builds report into stderr; the server must not have. */
function assertCleanStderr(stderr) {
  assert.doesNotMatch(stderr, /AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|runtime error:/);
}

/**
 * Closes stdin (the server exits on EOF) and checks the whole stderr. Run as
 * each group's last test, so a sanitizer report counts as a failed test.
 */
async function closeAndCheck(conn) {
  assert.ok(conn, 'not connected');
  await conn.client.close();
  await Promise.race([conn.stderrEnded, new Promise((done) => setTimeout(done, 2000).unref())]);
  assertCleanStderr(conn.wire.stderr);
}

// ---------------------------------------------------------------------------
// Initialize era: 2025-11-25 (the client's default) and 2025-06-18

for (const protocolVersion of ['2025-11-25', '2025-06-18']) {
  const options = protocolVersion === '2025-11-25' ? {} : { supportedProtocolVersions: [protocolVersion] };

  describe(`initialize era ${protocolVersion}`, () => {
    let conn;
    before(async () => { conn = await connect(options); });
    after(async () => { await conn?.client.close(); });

    test('handshake negotiates the offered version', () => {
      const { client, wire } = conn;
      assert.equal(client.getProtocolEra(), 'legacy');
      assert.equal(client.getNegotiatedProtocolVersion(), protocolVersion);
      assert.deepEqual(client.getServerVersion(),
        { name: SERVER_NAME, title: 'Snodo examples', version: SERVER_VERSION });
      assert.equal(client.getInstructions(), INSTRUCTIONS);
      // hot reload announces list changes to initialize-era sessions
      assert.deepEqual(client.getServerCapabilities()?.tools, { listChanged: true });

      const [initialize, initialized] = wire.sent;
      assert.equal(initialize.method, 'initialize');
      assert.equal(initialize.params.protocolVersion, protocolVersion);
      assert.deepEqual(initialized, { jsonrpc: '2.0', method: 'notifications/initialized' });
      const { response } = lastResponse(wire, 'initialize');
      assert.equal(response.result.protocolVersion, protocolVersion);
      assert.equal('resultType' in response.result, false);
    });

    test('tools/list returns the bundled catalog', async () => {
      const { client, wire } = conn;
      const result = await client.listTools();
      assert.deepEqual(result.tools.map((t) => t.name),
        ['25_inline_components', 'echo', 'greet', 'long_job', 'lookup', 'order', 'search',
        'send_message', 'touch_readme', 'version']);
      assert.deepEqual(result.tools.find((t) => t.name === 'search').inputSchema, SEARCH_TOOL.inputSchema);
      assert.deepEqual(result, { tools: toolsFor(protocolVersion) });

      // 2025 results carry no 2026 fields on the wire.
      const { request, response } = lastResponse(wire, 'tools/list');
      assert.equal(request.params?._meta?.[PROTOCOL_VERSION_KEY], undefined);
      assert.deepEqual(Object.keys(response.result), ['tools']);
    });

    for (const call of CALLS) {
      test(`tools/call ${call.label ?? call.name}`, async () => {
        const result = await conn.client.callTool({ name: call.name, arguments: call.arguments });
        assert.deepEqual(result, call.result);
        const { response } = lastResponse(conn.wire, 'tools/call');
        assert.deepEqual(response.result, call.result);
      });
    }

    test('tools/call without a required argument is a tool error', async () => {
      const result = await conn.client.callTool({ name: 'search', arguments: { page: 1 } });
      assert.deepEqual(result, { content: [text('Missing required arguments: query')], isError: true });
    });

    test('tools/call of an unknown tool is JSON-RPC error -32602', async () => {
      await assert.rejects(
        conn.client.callTool({ name: 'no_such_tool', arguments: {} }),
        (error) => {
          assert.equal(error.code, -32602);
          assert.match(error.message, /no_such_tool/);
          return true;
        });
      const { response } = lastResponse(conn.wire, 'tools/call');
      assert.equal(response.error.code, -32602);
    });

    test('the server exits on EOF without sanitizer reports', () => closeAndCheck(conn));
  });
}

// ---------------------------------------------------------------------------
// Stateless era: 2026-07-28

describe(`stateless era ${MODERN}`, () => {
  let conn;
  before(async () => {
    conn = await connect({ versionNegotiation: { mode: { pin: MODERN } } });
  });
  after(async () => { await conn?.client.close(); });

  /** Every 2026-07-28 result names the server and is complete. */
  function assertModernResult(result) {
    assert.equal(result.resultType, 'complete');
    const info = result._meta?.[SERVER_INFO_KEY];
    assert.equal(info?.name, SERVER_NAME);
    assert.equal(info?.version, SERVER_VERSION);
  }

  /** The client's view of a result, minus the `_meta` asserted on the wire. */
  function withoutMeta({ _meta, ...rest }) {
    return rest;
  }

  test('connect discovers the server without initialize', () => {
    const { client, wire } = conn;
    assert.equal(client.getProtocolEra(), 'modern');
    assert.equal(client.getNegotiatedProtocolVersion(), MODERN);
    assert.equal(client.getInstructions(), INSTRUCTIONS);
    // list changes reach 2026-07-28 clients on subscriptions/listen streams
    assert.deepEqual(client.getServerCapabilities()?.tools, { listChanged: true });
    assert.equal(client.getServerVersion()?.name, SERVER_NAME);

    const discovered = client.getDiscoverResult();
    assertModernResult(discovered);
    assert.deepEqual(discovered.supportedVersions, [MODERN, '2025-11-25', '2025-06-18']);
    assert.equal(discovered.instructions, INSTRUCTIONS);
    assert.equal(discovered.ttlMs, 60000);
    assert.equal(discovered.cacheScope, 'public');

    // The probe ran on a sibling process: this session saw no handshake.
    assert.equal(wire.sent.some((m) => m.method === 'initialize' || m.method?.startsWith('notifications/')), false);
  });

  test('server/discover on the session', async () => {
    const result = await conn.client.discover();
    assert.deepEqual(withoutMeta(result), {
      supportedVersions: [MODERN, '2025-11-25', '2025-06-18'],
      capabilities: conn.client.getServerCapabilities(),
      instructions: INSTRUCTIONS,
      ttlMs: 60000,
      cacheScope: 'public',
    });
    assertModernResult(lastResponse(conn.wire, 'server/discover').response.result);
  });

  test('tools/list returns the bundled catalog', async () => {
    const { client, wire } = conn;
    const result = await client.listTools(undefined, { cacheMode: 'refresh' });
    assert.deepEqual(result.tools.map((t) => t.name),
      ['25_inline_components', 'echo', 'greet', 'long_job', 'lookup', 'order', 'search',
        'send_message', 'touch_readme', 'version']);
    assert.deepEqual(result.tools.find((t) => t.name === 'search').inputSchema, SEARCH_TOOL.inputSchema);
    assert.deepEqual(withoutMeta(result), { tools: toolsFor(MODERN), ttlMs: 60000, cacheScope: 'public' });

    const { request, response } = lastResponse(wire, 'tools/list');
    assert.equal(request.params._meta[PROTOCOL_VERSION_KEY], MODERN);
    assert.deepEqual(request.params._meta[CLIENT_CAPABILITIES_KEY], {});
    assertModernResult(response.result);
  });

  for (const call of CALLS) {
    test(`tools/call ${call.label ?? call.name}`, async () => {
      const result = await conn.client.callTool({ name: call.name, arguments: call.arguments });
      assert.deepEqual(withoutMeta(result), call.result);

      const { request, response } = lastResponse(conn.wire, 'tools/call');
      assert.equal(request.params._meta[PROTOCOL_VERSION_KEY], MODERN);
      assert.ok(CLIENT_CAPABILITIES_KEY in request.params._meta);
      assertModernResult(response.result);
      const { resultType, ...rest } = withoutMeta(response.result);
      assert.deepEqual(rest, call.result);
    });
  }

  test('tools/call without a required argument is a tool error', async () => {
    const result = await conn.client.callTool({ name: 'search', arguments: { page: 1 } });
    assert.deepEqual(withoutMeta(result), { content: [text('Missing required arguments: query')], isError: true });
    assertModernResult(lastResponse(conn.wire, 'tools/call').response.result);
  });

  test('tools/call of an unknown tool is JSON-RPC error -32602', async () => {
    await assert.rejects(
      conn.client.callTool({ name: 'no_such_tool', arguments: {} }),
      (error) => {
        assert.equal(error.code, -32602);
        assert.match(error.message, /no_such_tool/);
        return true;
      });
    const { response } = lastResponse(conn.wire, 'tools/call');
    assert.equal(response.error.code, -32602);
  });

  test('an unsupported protocol version in _meta is error -32022', async () => {
    // Lower-level request API: user `_meta` keys win over the client's envelope.
    await assert.rejects(
      conn.client.request({ method: 'tools/list', params: { _meta: { [PROTOCOL_VERSION_KEY]: '2099-01-01' } } }),
      (error) => {
        assert.equal(error.code, -32022);
        assert.deepEqual(error.data, { supported: [MODERN, '2025-11-25', '2025-06-18'], requested: '2099-01-01' });
        return true;
      });
  });

  test('the server exits on EOF without sanitizer reports', () => closeAndCheck(conn));
});

describe(`version negotiation 'auto'`, () => {
  test(`selects ${MODERN} and calls a tool`, async () => {
    const conn = await connect({ versionNegotiation: { mode: 'auto' } });
    try {
      assert.equal(conn.client.getProtocolEra(), 'modern');
      assert.equal(conn.client.getNegotiatedProtocolVersion(), MODERN);
      const result = await conn.client.callTool({ name: 'greet', arguments: { name: 'Grace' } });
      assert.deepEqual(result.content, [text('Hello, Grace!')]);
      await closeAndCheck(conn);
    } finally {
      await conn.client.close();
    }
  });
});
