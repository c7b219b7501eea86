// The official MCP TypeScript SDK v2 serving one `echo` tool, the smallest
// idiomatic way, for tests/bench/run.sh.
//
//   node sdk_server.mjs http-modern PORT   createMcpHandler: 2026-07-28 per request
//                                          (2025-era traffic: its stateless fallback)
//   node sdk_server.mjs http-session PORT  initialize-era sessions: one
//                                          NodeStreamableHTTPServerTransport per
//                                          Mcp-Session-Id (the SDK's sessionful idiom)
//   node sdk_server.mjs stdio              serveStdio (either era, per connection)
//
// Listens on 127.0.0.1 only, endpoint /mcp. The dependencies are pinned in
// package.json next to this file; run.sh copies both into build/node/bench.
import { createServer } from 'node:http';
import { randomUUID } from 'node:crypto';
import { McpServer, createMcpHandler } from '@modelcontextprotocol/server';
import {
  NodeStreamableHTTPServerTransport,
  localhostHostValidation,
  toNodeHandler,
} from '@modelcontextprotocol/node';
import * as z from 'zod';

function factory() {
  const server = new McpServer({ name: 'echo-bench', version: '1.0.0' });
  server.registerTool(
    'echo',
    { description: 'Echo the text back', inputSchema: z.object({ text: z.string() }) },
    async ({ text }) => ({ content: [{ type: 'text', text: `echo: ${text}` }] }),
  );
  return server;
}

const [mode, portArg] = process.argv.slice(2);
const port = Number(portArg);
const validateHost = localhostHostValidation();

function listen(handler) {
  createServer((req, res) => {
    if (!validateHost(req, res)) return;
    if (req.url !== '/mcp') {
      res.writeHead(404).end();
      return;
    }
    handler(req, res);
  }).listen(port, '127.0.0.1');
}

if (mode === 'http-modern') {
  listen(toNodeHandler(createMcpHandler(factory)));
} else if (mode === 'http-session') {
  const transports = new Map();
  listen(async (req, res) => {
    const sid = req.headers['mcp-session-id'];
    let transport = sid ? transports.get(sid) : undefined;
    if (transport === undefined) {
      if (sid !== undefined || req.method !== 'POST') {
        res.writeHead(404).end();
        return;
      }
      transport = new NodeStreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        enableJsonResponse: true,
        onsessioninitialized: (id) => transports.set(id, transport),
      });
      transport.onclose = () => {
        if (transport.sessionId) transports.delete(transport.sessionId);
      };
      await factory().connect(transport);
    }
    await transport.handleRequest(req, res);
  });
} else if (mode === 'stdio') {
  const { serveStdio } = await import('@modelcontextprotocol/server/stdio');
  serveStdio(factory);
} else {
  console.error('usage: sdk_server.mjs http-modern PORT | http-session PORT | stdio');
  process.exit(2);
}
