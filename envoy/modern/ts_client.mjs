// The TypeScript SDK v2 MCP client (@modelcontextprotocol/client 2.4.0), driven by a plan.
//
// Reads one JSON step per stdin line and prints one JSON line per step, so a Python test can
// see exactly what the official client made of each answer:
//   {"op": "connect", "url": URL, "era": "2026-07-28" | "auto" | "legacy", "headers": {...}}
//   {"op": "list"}                                  -> the ListToolsResult (cache refreshed)
//   {"op": "call", "name": N, "arguments": {...}}   -> the CallToolResult the client returned
//   {"op": "listen_once", "trigger": URL}           -> opens subscriptions/listen, POSTs the
//        trigger URL (a test server's control route), waits for tools/list_changed, closes
//   {"op": "surface"}   -> {"instructions", "prompts", "resourceTemplates", "_meta"} as the client has them
//   {"op": "get_prompt", "name": N, "arguments": {...}}  -> the GetPromptResult
//   {"op": "close"}
// Output: {"step": i, "op": OP, "ok": true, "result": ...} or {"ok": false, "error": {...}}
// (an exception the client raised: its class, code and message). Elicitations are accepted
// with {"confirm": true}.
//
// Era: the SDK's default negotiation is "legacy" (the 2025 initialize handshake, even against
// a 2026-07-28 server). ClientOptions.versionNegotiation selects the 2026-07-28 era:
// {mode: {pin: "2026-07-28"}} adopts it without a probe, {mode: "auto"} probes server/discover
// and falls back to initialize.
import { createInterface } from 'node:readline';

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

let client;

function negotiation(era) {
    if (era === 'legacy') return { mode: 'legacy' };
    if (era === 'auto') return { mode: 'auto' };
    return { mode: { pin: era } };
}

async function connect(step) {
    client = new Client(
        { name: 'toolseal-e2e-ts', version: '1.0.0' },
        { capabilities: { elicitation: { form: {} } }, versionNegotiation: negotiation(step.era ?? '2026-07-28') }
    );
    client.setRequestHandler('elicitation/create', async () => ({ action: 'accept', content: { confirm: true } }));
    const transport = new StreamableHTTPClientTransport(new URL(step.url), {
        requestInit: { headers: step.headers ?? {} }
    });
    await client.connect(transport);
    return { protocol_version: client.getNegotiatedProtocolVersion() ?? null, era: client.getProtocolEra() ?? null };
}

async function listenOnce(step) {
    let changed;
    const seen = new Promise(resolve => (changed = resolve));
    client.setNotificationHandler('notifications/tools/list_changed', () => changed(true));
    const subscription = await client.listen({ toolsListChanged: true });
    const trigger = await fetch(step.trigger, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
    if (!trigger.ok) throw new Error(`trigger answered ${trigger.status}`);
    const timeout = new Promise((_, reject) => setTimeout(() => reject(new Error('no list_changed within 10 s')), 10000));
    await Promise.race([seen, timeout]);
    await subscription.close();
    return { list_changed: true };
}

// What the client shows an agent beyond tools: its instructions, prompts and templates
// (lists refreshed, so each is the gateway's answer of now).
async function surface() {
    const prompts = await client.listPrompts(undefined, { cacheMode: 'refresh' });
    const templates = await client.listResourceTemplates(undefined, { cacheMode: 'refresh' });
    return {
        instructions: client.getInstructions() ?? null,
        prompts: prompts.prompts,
        resourceTemplates: templates.resourceTemplates,
        _meta: { prompts: prompts._meta ?? null, templates: templates._meta ?? null }
    };
}

async function run(step) {
    switch (step.op) {
        case 'connect':
            return connect(step);
        case 'list':
            return client.listTools(undefined, { cacheMode: 'refresh' });
        case 'call':
            return client.callTool({ name: step.name, arguments: step.arguments ?? {} });
        case 'surface':
            return surface();
        case 'get_prompt':
            return client.getPrompt({ name: step.name, arguments: step.arguments ?? {} });
        case 'listen_once':
            return listenOnce(step);
        case 'close':
            await client.close();
            return {};
        default:
            throw new Error(`unknown op ${step.op}`);
    }
}

const lines = createInterface({ input: process.stdin });
let index = 0;
for await (const line of lines) {
    if (!line.trim()) continue;
    const step = JSON.parse(line);
    let out;
    try {
        out = { step: index, op: step.op, ok: true, result: await run(step) };
    } catch (error) {
        out = {
            step: index, op: step.op, ok: false,
            error: { name: error?.constructor?.name ?? 'Error', code: error?.code ?? null, message: String(error?.message ?? error) }
        };
    }
    process.stdout.write(JSON.stringify(out) + '\n');
    index += 1;
}
if (client) await client.close().catch(() => {});
process.exit(0);
