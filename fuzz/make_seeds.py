#!/usr/bin/env python3
"""Writes the seed inputs of every fuzz target into fuzz/seeds/<target>/ from the project's
own recorded transcripts (examples/transcripts) and a few hand-written attack shapes.
`cargo fuzz cmin` then reduces them into fuzz/corpus/<target>/ (see fuzz/README.md)."""
import hashlib, json, os, re, struct, sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SEP = b"\xff\xff"

def transcripts():
    d = os.path.join(ROOT, "examples", "transcripts")
    for name in sorted(n for n in os.listdir(d) if n.endswith(".json")):
        data = json.load(open(os.path.join(d, name)))
        yield name, data if isinstance(data, list) else data.get("exchanges") or data.get("entries")

def text(v):
    return b"" if v in (None, "None") else v.encode()

def sse_data(body):
    return [m.group(1) for m in re.finditer(rb"data: ?(.*?)\r?\n", body)]

def header(headers, name):
    return next((v for k, v in headers or [] if k.lower() == name), None)

ATTACKS_JSON = [
    b'{"a":1,"a":2}', b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","name":"rm"}}',
    b'[' * 70 + b']' * 70, b'{"x":1e400}', b'{"x":-1e-400}', b'{"x":123456789012345678901234567890}',
    b'"\\ud800"', b'"\\udc00\\ud800"', b'"\xed\xa0\x80"', b'\xef\xbb\xbf{}', b'{"\\u0061":1,"a":2}',
    b'{"k":"\xff"}', b'[1,2,3,]', b'{"a":1}x', b'-0', b'1.0', b'1e2', b'0.1e-7',
    b'[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"delete_file"}}]',
    b'{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}',
    b'{"jsonrpc":"2.0","id":"1","result":{"tools":[]}}',
    b'{"jsonrpc":"2.0","id":1,"result":{"\\u0074ools":[{"name":"evil"}]}}',
]

def write(target, items):
    out = os.path.join(HERE, "seeds", target)
    os.makedirs(out, exist_ok=True)
    for item in items:
        with open(os.path.join(out, hashlib.sha1(item).hexdigest()), "wb") as f:
            f.write(item)
    print(f"{target}: {len(items)} seeds")

def main():
    bodies, sse_bodies, tool_lists, engine = [], [], [], []
    for name, exchanges in transcripts():
        steps = []
        for e in exchanges:
            if "http_method" not in e:
                continue
            req, resp = text(e.get("request_body")), text(e.get("response_body_raw"))
            ctype = header(e.get("response_headers"), "content-type") or ""
            if req:
                bodies.append(req)
            if ctype.startswith("text/event-stream"):
                sse_bodies.append(resp)
                bodies.extend(sse_data(resp))
            elif resp:
                bodies.append(resp)
            for d in sse_data(resp) if ctype.startswith("text/event-stream") else [resp]:
                try:
                    r = json.loads(d).get("result", {})
                    if isinstance(r, dict) and "tools" in r:
                        tool_lists.append(json.dumps({"tools": r["tools"]}).encode())
                except (ValueError, AttributeError):
                    pass
            method = {"POST": 0, "GET": 2, "DELETE": 3}.get(e["http_method"], 0)
            ctl1 = method | (0 if header(e.get("request_headers"), "content-type") else 12) \
                | (16 if ctype.startswith("text/event-stream") else 0)
            steps.append(bytes([ctl1, 6]) + req + SEP + resp)
        for selector in range(6):
            engine.append(bytes([selector]) + SEP + SEP.join(steps[:8]))
    # Drift: the two server-everything releases one after the other, and approvals.
    a = [s for s in engine if s[0] == 0]
    if len(a) >= 2:
        engine.append(a[0] + SEP + a[1][3:] + SEP + bytes([0x80, 0]) + SEP + b"" + SEP + a[1][3:])
    write("strict_json", [bytes([64]) + b for b in bodies + ATTACKS_JSON] + [bytes([3]) + b for b in ATTACKS_JSON])
    write("jsonrpc_frames", [bytes([64]) + b for b in bodies + ATTACKS_JSON])
    write("canonical_fingerprint", [bytes([f]) + t for t in tool_lists for f in (0, 7)] + [bytes([0]) + b for b in ATTACKS_JSON])
    crafted_sse = [b"\xef\xbb\xbfdata: a\r\n\r\n", b"data: a\rdata: b\r\r", b": keepalive\n\nid: 1\ndata:\n\n",
                   b"data: {\"x\":1}\r\n\r\ndata: partial", b"retry: 10\nid: a\0b\nevent: e\ndata: x\n\n"]
    write("sse_chunks", [bytes([3, 255]) + struct.pack("<HHH", 7, 40, 41) + b for b in sse_bodies + crafted_sse])
    configs = [b"{}", b"", json.dumps({"posture": "strict", "servers": {"deploy": {"pin": "sha256:" + "0" * 64}}}).encode(),
               json.dumps({"posture": "discovery", "server_id": {"from": "header", "name": "x-mcp-server"},
                           "servers": {"deploy": {"posture": "strict", "allow_subset": False, "list_changed": "hold",
                                                  "quarantine": "held", "results": "observe"}},
                           "policy": {"default": "allow", "rules": [
                               {"action": "deny", "server": "*", "tool": "delete_*"},
                               {"action": "deny", "annotations": {"destructiveHint": True}},
                               {"action": "deny", "tool": "deploy_preview", "arguments": {"/region": {"not_in": ["us-east-preview"]}}},
                               {"action": "allow", "tool": "admin_*", "principal": {"header": "x-user-group", "in": ["ops"]}},
                               {"action": "deny", "tool": "admin_*"}]},
                           "limits": {"max_request_bytes": 1048576, "max_response_bytes": 8388608, "max_depth": 64},
                           "fingerprint": {"fields": ["name", "description", "inputSchema", "annotations"]},
                           "admin": {"prefix": "/toolseal/", "token_sha256": "0" * 64}, "audit": {"call_allowed": True}}).encode()]
    for t in tool_lists[:3]:
        tools = json.loads(t)["tools"]
        configs.append(json.dumps({"servers": {"deploy": {"lock": {"fingerprint": "sha256:" + "0" * 64, "tools": tools}}}}).encode())
    write("config_parse", configs)
    write("engine_exchanges", engine)
    write("regex_engine", regex_seeds())
    write("schema_validator", schema_seeds(tool_lists))

def drawn(tag, count, size):
    """Choice bytes for the structured half of a target (mode byte 1), deterministic."""
    out = []
    for i in range(count):
        block = b""
        while len(block) < size:
            block += hashlib.sha256(f"{tag}{i}{len(block)}".encode()).digest()
        out.append(bytes([1]) + block[:size])
    return out

def regex_seeds():
    """Raw pattern and text (mode 0: split byte = pattern length) from the RegExp verdicts
    of other engines in plugin/core/tests/data/schema, plus drawn pattern trees."""
    cases = json.load(open(os.path.join(ROOT, "plugin", "core", "tests", "data", "schema", "regex_cases.json")))
    seeds = []
    for case in cases:
        pattern = case["pattern"].encode()
        if len(pattern) > 255:
            continue
        for text_, _ in case["texts"][:2]:
            seeds.append(bytes([0, len(pattern)]) + pattern + text_.encode())
    return seeds + drawn("regex", 64, 160)

def schema_seeds(tool_lists):
    """Raw schema and instance (mode 0: the schema is the first 4 x split bytes, padded with
    spaces) from the validator verdicts in plugin/core/tests/data/schema and the recorded
    input schemas, plus drawn schemas."""
    seeds = []
    data = os.path.join(ROOT, "plugin", "core", "tests", "data", "schema")
    pairs = []
    for name in ("schema_cases.json", "schema_cases_draft7.json"):
        for case in json.load(open(os.path.join(data, name))):
            for instance, _ in case["instances"][:2]:
                pairs.append((case["schema"], instance))
    for t in tool_lists:
        for tool in json.loads(t)["tools"]:
            if "inputSchema" in tool:
                pairs.append((tool["inputSchema"], {}))
    for schema, instance in pairs:
        raw = json.dumps(schema, separators=(",", ":")).encode()
        if len(raw) > 1020:
            continue
        split = (len(raw) + 3) // 4
        seeds.append(bytes([0, split]) + raw.ljust(split * 4) + json.dumps(instance).encode())
    return seeds + drawn("schema", 64, 300)

if __name__ == "__main__":
    sys.exit(main())
