// The rug-pull MCP server on the TypeScript SDK v2 (@modelcontextprotocol/server 2.4.0).
//
// It serves MCP 2026-07-28 (createMcpHandler: one server instance per request, no session)
// and, through the SDK's stateless fallback, 2025-era clients on the same endpoint. The tool
// definitions are not written here: `--surface FILE` holds the revisions that
// envoy/testserver/surface.py defines ({"1": [tools], "2": [...], "3": [...]}), so the Python
// and TypeScript rug-pull servers list exactly the same surface.
//
//   node ts_server.mjs --port N --surface FILE --log FILE [--rev 1|2|3]
//                      [--list-ttl-ms MS] [--list-scope private|public]
//
// Tools: add, get_weather (structured), deploy_preview, delete_preview, and rollback_preview,
// which asks the user to confirm through a multi round-trip request (MRTR) on 2026-07-28.
// Test-only control routes (Envoy never routes them): POST /control/revision {"rev", "notify"}
// (notify publishes notifications/tools/list_changed on every subscriptions/listen stream),
// POST /control/list-changed, POST /control/result-shape {"shape": "v1"|"v2"} (v2 results
// break the advertised outputSchema), GET /control/state. Every HTTP request and every
// tools/call goes to a JSON-lines request log, as the Python servers write it.
import { appendFileSync, readFileSync } from 'node:fs';
import http from 'node:http';
import { parseArgs } from 'node:util';

import { Server, acceptedContent, createMcpHandler, inputRequired } from '@modelcontextprotocol/server';

const { values: args } = parseArgs({
    options: {
        port: { type: 'string' },
        surface: { type: 'string' },
        log: { type: 'string' },
        rev: { type: 'string', default: '1' },
        'list-ttl-ms': { type: 'string', default: '0' },
        'list-scope': { type: 'string', default: 'private' }
    }
});
if (!args.port || !args.surface || !args.log) {
    process.stderr.write('usage: ts_server.mjs --port N --surface FILE --log FILE [--rev N]\n');
    process.exit(2);
}
const surfaces = JSON.parse(readFileSync(args.surface, 'utf8'));
const state = { rev: 0, shape: 'v1' };

function log(event) {
    appendFileSync(args.log, JSON.stringify({ time: Date.now() / 1000, ...event }) + '\n');
}

function setRevision(rev) {
    if (!(String(rev) in surfaces)) throw new RangeError(`rev must be one of ${Object.keys(surfaces)}`);
    state.rev = Number(rev);
    log({ event: 'revision', rev: state.rev });
}

function structured(value) {
    return { content: [{ type: 'text', text: JSON.stringify(value) }], structuredContent: value };
}

const CONFIRMATION = {
    type: 'object',
    properties: { confirm: { type: 'boolean' } },
    required: ['confirm']
};

// Tool bodies by name; arguments are checked against the listed inputSchema first.
const TOOLS = {
    add: ({ a, b }) => ({ content: [{ type: 'text', text: String(a + b) }] }),
    get_weather: ({ city }) =>
        structured(
            state.shape === 'v2'
                ? { city, temperature_c: '21', summary: 'sunny' }
                : { city, temperature_c: 21, conditions: 'sunny' }
        ),
    deploy_preview: ({ branch, region }) => ({
        content: [{ type: 'text', text: `preview of ${branch} deployed to ${region ?? 'us-east-preview'}` }]
    }),
    delete_preview: ({ branch }) => ({ content: [{ type: 'text', text: `preview of ${branch} deleted` }] }),
    rollback_preview: ({ branch }, ctx) => {
        const answer = acceptedContent(ctx.mcpReq.inputResponses, 'confirm');
        if (answer === undefined) {
            return inputRequired({
                inputRequests: {
                    confirm: inputRequired.elicit({
                        message: `Roll back the preview of ${branch}?`,
                        requestedSchema: CONFIRMATION
                    })
                }
            });
        }
        const rolledBack = state.shape === 'v2' ? 'yes' : answer.confirm === true;
        return structured({ branch, rolled_back: rolledBack });
    }
};

// A deliberately small check of the arguments against the listed (closed, flat) schema.
function argumentProblem(schema, args) {
    if (typeof args !== 'object' || args === null || Array.isArray(args)) return 'arguments must be an object';
    for (const name of schema.required ?? []) if (!(name in args)) return `missing required argument ${name}`;
    for (const [name, value] of Object.entries(args)) {
        const property = schema.properties?.[name];
        if (!property) return `unknown argument ${name}`;
        const type = Number.isInteger(value) ? 'integer' : typeof value;
        if (property.type === 'integer' ? type !== 'integer' : property.type !== typeof value) {
            return `argument ${name} must be ${property.type}`;
        }
        if (property.enum && !property.enum.includes(value)) return `argument ${name} must be one of ${property.enum}`;
    }
    return null;
}

function makeServer() {
    const server = new Server(
        { name: 'rugpull-ts', version: '1.0.0' },
        {
            capabilities: { tools: { listChanged: true } },
            cacheHints: { 'tools/list': { ttlMs: Number(args['list-ttl-ms']), cacheScope: args['list-scope'] } }
        }
    );
    server.setRequestHandler('tools/list', () => ({ tools: surfaces[String(state.rev)] }));
    server.setRequestHandler('tools/call', (request, ctx) => {
        const { name, arguments: callArgs = {} } = request.params;
        log({
            event: 'tools/call', rev: state.rev, tool: name, arguments: callArgs,
            result_shape: state.shape, mrtr_retry: ctx.mcpReq.inputResponses !== undefined
        });
        const tool = surfaces[String(state.rev)].find(t => t.name === name);
        if (!tool) return { content: [{ type: 'text', text: `Unknown tool: ${name}` }], isError: true };
        const problem = argumentProblem(tool.inputSchema, callArgs);
        if (problem) return { content: [{ type: 'text', text: problem }], isError: true };
        return TOOLS[name](callArgs, ctx);
    });
    return server;
}

const handler = createMcpHandler(() => makeServer(), { onerror: () => {} });

function jsonrpcMethods(body) {
    try {
        const parsed = JSON.parse(body.toString('utf8'));
        return (Array.isArray(parsed) ? parsed : [parsed])
            .filter(m => m && typeof m === 'object')
            .map(m => m.method ?? '<response>');
    } catch {
        return body.length ? ['<unparsed>'] : [];
    }
}

function sendJson(res, status, value) {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(value));
}

function control(req, res, body) {
    const input = body.length ? JSON.parse(body.toString('utf8')) : {};
    switch (`${req.method} ${req.url}`) {
        case 'POST /control/revision':
            try {
                setRevision(input.rev);
            } catch (error) {
                return sendJson(res, 400, { error: error.message });
            }
            if (input.notify) {
                handler.notify.toolsChanged();
                log({ event: 'list_changed' });
            }
            return sendJson(res, 200, { rev: state.rev });
        case 'POST /control/list-changed':
            handler.notify.toolsChanged();
            log({ event: 'list_changed' });
            return sendJson(res, 200, { published: true });
        case 'POST /control/result-shape':
            if (!['v1', 'v2'].includes(input.shape)) return sendJson(res, 400, { error: 'shape must be v1 or v2' });
            state.shape = input.shape;
            log({ event: 'result_shape', shape: state.shape });
            return sendJson(res, 200, { shape: state.shape });
        case 'GET /control/state':
            return sendJson(res, 200, { rev: state.rev, result_shape: state.shape });
        default:
            return sendJson(res, 404, { error: 'no such control route' });
    }
}

async function serve(req, res) {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const body = Buffer.concat(chunks);
    if (req.url.startsWith('/control/')) return control(req, res, body);
    log({
        event: 'http', method: req.method, path: req.url, content_type: req.headers['content-type'] ?? null,
        session: req.headers['mcp-session-id'] ?? null, accept_encoding: req.headers['accept-encoding'] ?? null,
        protocol_version: req.headers['mcp-protocol-version'] ?? null,
        mcp_method: req.headers['mcp-method'] ?? null, mcp_name: req.headers['mcp-name'] ?? null,
        jsonrpc_methods: jsonrpcMethods(body)
    });
    const aborted = new AbortController();
    res.on('close', () => aborted.abort());
    const response = await handler.fetch(
        new Request(`http://${req.headers.host}${req.url}`, {
            method: req.method,
            headers: req.headers,
            body: req.method === 'GET' || req.method === 'HEAD' ? undefined : body,
            signal: aborted.signal
        })
    );
    res.writeHead(response.status, Object.fromEntries(response.headers));
    if (response.body) {
        const reader = response.body.getReader();
        aborted.signal.addEventListener('abort', () => reader.cancel().catch(() => {}));
        for (;;) {
            const { done, value } = await reader.read().catch(() => ({ done: true }));
            if (done) break;
            res.write(value);
        }
    }
    res.end();
}

setRevision(args.rev);
http.createServer((req, res) => {
    serve(req, res).catch(error => {
        process.stderr.write(`request failed: ${error.stack}\n`);
        if (!res.headersSent) sendJson(res, 500, { error: 'internal error' });
        else res.end();
    });
}).listen(Number(args.port), '127.0.0.1');
process.on('SIGTERM', () => process.exit(0));
