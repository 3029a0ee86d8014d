// A TypeScript SDK 2.x server for the client's interop tests (tests/it/client/interop.rs),
// on 127.0.0.1 and a free port, which it prints as `listening on PORT`.
//
// Modern (2026-07-28) requests go to the SDK's stateless handler; legacy ones (an
// `initialize`, or a request of its session) to a sessionful Streamable HTTP transport, the
// routing the SDK's own legacy-routing example uses, so that the SDK's legacy shim can send
// its questions as real requests on the call's stream. Both serve the same tools:
// - `echo` {text}: returns the text;
// - `ask_name`: asks a form for `name` (an input-required result), then greets;
// - `ask_roots`: asks for the client's roots, then lists their URIs.
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import {
  McpServer,
  WebStandardStreamableHTTPServerTransport,
  acceptedContent,
  createMcpHandler,
  inputRequired,
  inputResponse,
  isInitializeRequest,
  isLegacyRequest
} from '@modelcontextprotocol/server';
import * as z from 'zod/v4';

function build() {
  const server = new McpServer({ name: 'roundtrip-interop-ts', version: '1.0.0' });
  server.registerTool(
    'echo',
    { description: 'Returns its text', inputSchema: z.object({ text: z.string() }) },
    async ({ text }) => ({ content: [{ type: 'text', text }] })
  );
  server.registerTool(
    'ask_name',
    { description: 'Asks the user for a name, then greets them', inputSchema: z.object({}) },
    async (_args, ctx) => {
      const answer = acceptedContent(ctx.mcpReq.inputResponses, 'name', z.object({ name: z.string() }));
      if (answer === undefined) {
        return inputRequired({
          inputRequests: {
            name: inputRequired.elicit({
              message: 'What is your name?',
              requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] }
            })
          }
        });
      }
      return { content: [{ type: 'text', text: `Hello, ${answer.name}!` }] };
    }
  );
  server.registerTool(
    'ask_roots',
    { description: "Lists the client's roots", inputSchema: z.object({}) },
    async (_args, ctx) => {
      const view = inputResponse(ctx.mcpReq.inputResponses, 'roots');
      if (view.kind !== 'roots') {
        return inputRequired({ inputRequests: { roots: inputRequired.listRoots() } });
      }
      return { content: [{ type: 'text', text: view.roots.map((r) => r.uri).join(',') }] };
    }
  );
  return server;
}

const modern = createMcpHandler(() => build(), { legacy: 'reject' });
const sessions = new Map();

async function legacy(request, body) {
  const sid = request.headers.get('mcp-session-id');
  if (sid && sessions.has(sid)) {
    return sessions.get(sid).handleRequest(request, { parsedBody: body });
  }
  if (!sid && request.method === 'POST' && isInitializeRequest(body)) {
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => sessions.set(id, transport)
    });
    transport.onclose = () => transport.sessionId && sessions.delete(transport.sessionId);
    await build().connect(transport);
    return transport.handleRequest(request, { parsedBody: body });
  }
  const status = sid ? 404 : 400;
  return Response.json({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'No such session' } }, { status });
}

async function route(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const raw = Buffer.concat(chunks);
  const init = { method: req.method, headers: req.headers };
  if (req.method !== 'GET' && req.method !== 'HEAD') init.body = raw;
  const request = new Request(`http://${req.headers.host}${req.url}`, init);
  let body;
  try {
    body = raw.length ? JSON.parse(raw.toString('utf8')) : undefined;
  } catch {
    body = undefined;
  }
  const isLegacy = req.method !== 'POST' || (await isLegacyRequest(request.clone()));
  return isLegacy ? legacy(request, body) : modern.fetch(request);
}

const server = http.createServer(async (req, res) => {
  try {
    const response = await route(req);
    res.writeHead(response.status, Object.fromEntries(response.headers));
    // An SSE stream may have nothing to say for a while: send the headers now.
    res.flushHeaders();
    if (response.body) {
      for await (const chunk of response.body) res.write(chunk);
    }
    res.end();
  } catch (error) {
    console.error(error);
    if (!res.headersSent) res.writeHead(500);
    res.end();
  }
});
server.listen(0, '127.0.0.1', () => console.log(`listening on ${server.address().port}`));
