"""Capture the tools/list of a stdio MCP server, for screening's false-positive tests.

Usage: python3 capture.py COMMAND [ARGS...] > NAME.tools.json

A minimal client: initialize (protocol 2025-06-18, no capabilities), notifications/initialized,
then tools/list page by page until there is no nextCursor. Prints {"serverInfo", "tools"};
add a "source" line by hand saying which package and version was run.
Examples used for the files beside this script:
  node node_modules/@modelcontextprotocol/server-filesystem/dist/index.js /tmp/empty-dir
  node node_modules/@modelcontextprotocol/server-memory/dist/index.js
  node node_modules/@modelcontextprotocol/server-everything/dist/index.js stdio
  <venv>/bin/mcp-server-fetch    <venv>/bin/mcp-server-time    <venv>/bin/mcp-server-git --repository .
"""
import json
import subprocess
import sys


def main() -> None:
    server = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True)

    def send(message: dict) -> None:
        server.stdin.write(json.dumps(message) + "\n")
        server.stdin.flush()

    def receive(request_id: int) -> dict:
        while True:
            line = server.stdout.readline()
            if not line:
                raise SystemExit("the server closed its output")
            message = json.loads(line)
            if message.get("id") == request_id:
                return message

    send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
          "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                     "clientInfo": {"name": "toolseal-capture", "version": "0"}}})
    info = receive(1)["result"].get("serverInfo")
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    tools, cursor, request_id = [], None, 2
    while True:
        params = {"cursor": cursor} if cursor else {}
        send({"jsonrpc": "2.0", "id": request_id, "method": "tools/list", "params": params})
        result = receive(request_id)["result"]
        tools += result["tools"]
        cursor = result.get("nextCursor")
        request_id += 1
        if not cursor:
            break
    server.terminate()
    server.wait()
    print(json.dumps({"serverInfo": info, "tools": tools}, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
