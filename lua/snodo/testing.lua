--- snodo.testing: load a server directory and call it in-process, through the
--- same engine that serves stdio and HTTP. For busted specs:
---
---   local testing = require "snodo.testing"
---   local server = testing.load("components")
---   local result = server:call_tool("search", { query = "json" })
---   assert.same("searching for json on page 1", result.content[1].text)
---
--- Requests go out in the initialize era (2025-11-25) unless opts.protocol
--- is "2026-07-28", which sends the per-request _meta instead.
local core = ...
if type(core) ~= "table" then
  error("snodo.testing runs in plain Lua (busted), not inside a server", 2)
end

local M = {}
local Server = {}
Server.__index = Server

local MODERN = "2026-07-28"

--- Loads `dir` in a fresh VM; raises the load error ("file:line: ...").
function M.load(dir)
  return setmetatable({ handle = core.load(dir), next_id = 0, initialized = false }, Server)
end

--- Loads `dir` and returns true, or false and the load error.
function M.check(dir)
  local ok, server = pcall(M.load, dir)
  if not ok then return false, server end
  server:close()
  return true
end

M.encode, M.decode = core.encode, core.decode

--- Sends one raw message (a table or JSON text); returns every message the
--- server emitted, decoded, in order.
function Server:send(message)
  if type(message) ~= "string" then message = core.encode(message) end
  local out = {}
  for i, text in ipairs(core.send(self.handle, message)) do out[i] = core.decode(text) end
  return out
end

function Server:initialize(protocol, capabilities)
  local r = self:send { jsonrpc = "2.0", id = "init", method = "initialize", params = {
    protocolVersion = protocol or "2025-11-25",
    capabilities = capabilities or {},
    clientInfo = { name = "snodo.testing", version = "1" },
  } }
  self:send { jsonrpc = "2.0", method = "notifications/initialized" }
  self.initialized = true
  return r[1]
end

--- Sends a request; returns the response and the notifications before it.
--- opts.protocol: "2025-11-25" (default), "2025-06-18" or "2026-07-28";
--- opts.capabilities: client capabilities; opts.meta: extra _meta keys.
function Server:request(method, params, opts)
  opts = opts or {}
  params = params or {}
  local protocol = opts.protocol or "2025-11-25"
  if protocol == MODERN then
    local meta = {}
    for k, v in pairs(opts.meta or {}) do meta[k] = v end
    meta["io.modelcontextprotocol/protocolVersion"] = MODERN
    meta["io.modelcontextprotocol/clientCapabilities"] = opts.capabilities or {}
    params._meta = meta
  else
    if not self.initialized then self:initialize(protocol, opts.capabilities) end
    if opts.meta then params._meta = opts.meta end
  end
  self.next_id = self.next_id + 1
  local messages = self:send { jsonrpc = "2.0", id = self.next_id, method = method,
                               params = params }
  local response = table.remove(messages)
  return response, messages
end

--- The tools as tools/list shows them.
function Server:list_tools(opts)
  local r = self:request("tools/list", {}, opts)
  assert(r.result, r.error and r.error.message)
  return r.result.tools
end

--- Calls a tool: returns the CallToolResult, or nil and the JSON-RPC error.
function Server:call_tool(name, arguments, opts)
  local r, notes = self:request("tools/call", { name = name, arguments = arguments or {} }, opts)
  if r.error then return nil, r.error, notes end
  return r.result, nil, notes
end

--- Reads a resource: returns the ReadResourceResult, or nil and the error.
function Server:read_resource(uri, opts)
  local r = self:request("resources/read", { uri = uri }, opts)
  if r.error then return nil, r.error end
  return r.result
end

--- Renders a prompt: returns the GetPromptResult, or nil and the error.
function Server:get_prompt(name, arguments, opts)
  local r = self:request("prompts/get", { name = name, arguments = arguments or {} }, opts)
  if r.error then return nil, r.error end
  return r.result
end

--- completion/complete for a prompt ({ prompt = name }) or a resource
--- template ({ resource = uri_template }); returns the completion object.
function Server:complete(ref, argument, value, opts)
  local wire = ref.prompt and { type = "ref/prompt", name = ref.prompt }
               or { type = "ref/resource", uri = ref.resource }
  local r = self:request("completion/complete",
                         { ref = wire, argument = { name = argument, value = value } }, opts)
  if r.error then return nil, r.error end
  return r.result.completion
end

--- Every page of a list method ("tools/list", "resources/list", ...): the
--- items of all pages and the number of pages.
function Server:list_all(method, key, opts)
  local items, pages, cursor = {}, 0, nil
  repeat
    local r = self:request(method, { cursor = cursor }, opts)
    assert(r.result, r.error and r.error.message)
    for _, item in ipairs(r.result[key]) do items[#items + 1] = item end
    pages = pages + 1
    cursor = r.result.nextCursor
  until cursor == nil
  return items, pages
end

function Server:close()
  core.close(self.handle)
end

return M
