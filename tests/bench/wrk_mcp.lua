-- wrk script for tests/bench/run.sh: POST tools/call echo {text = "hello"}.
--   MCP_ERA=modern       2026-07-28: _meta envelope in the body, MCP-Protocol-Version,
--                        Mcp-Method and Mcp-Name headers, no session
--   MCP_ERA=legacy       2025-11-25 initialize era: MCP_SESSION_ID (made by run.sh
--                        with initialize + notifications/initialized) on every request
-- Requests carry distinct JSON-RPC ids (wrk thread number * 1e9 + 1..4096),
-- so a session never sees two requests in flight under one id.
-- done() prints one "RESULT key=value ..." line that run.sh parses.
local era = os.getenv("MCP_ERA") or "modern"

wrk.method = "POST"
wrk.path = "/mcp"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"

local prefix = '{"jsonrpc":"2.0","id":'
local suffix
if era == "modern" then
  wrk.headers["MCP-Protocol-Version"] = "2026-07-28"
  wrk.headers["Mcp-Method"] = "tools/call"
  wrk.headers["Mcp-Name"] = "echo"
  suffix = ',"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"},'
    .. '"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
    .. '"io.modelcontextprotocol/clientCapabilities":{}}}}'
else
  local session = os.getenv("MCP_SESSION_ID")
  assert(session and session ~= "", "MCP_ERA=legacy needs MCP_SESSION_ID")
  wrk.headers["MCP-Protocol-Version"] = "2025-11-25"
  wrk.headers["Mcp-Session-Id"] = session
  suffix = ',"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}'
end

local nthreads = 0
function setup(thread)
  thread:set("thread_no", nthreads)
  nthreads = nthreads + 1
end

-- Requests are formatted once per thread (a pool of 4096 distinct ids, more than
-- could ever be in flight) so wrk spends its CPU on the socket, not in Lua.
local pool, pool_size, next_req = {}, 4096, 0
function init(args)
  for i = 1, pool_size do
    pool[i] = wrk.format(nil, nil, nil, prefix .. (thread_no * 1000000000 + i) .. suffix)
  end
end

function request()
  next_req = next_req % pool_size + 1
  return pool[next_req]
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "RESULT requests=%d duration_us=%d p50_us=%d p99_us=%d connect=%d read=%d write=%d status=%d timeout=%d\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    e.connect, e.read, e.write, e.status, e.timeout))
end
